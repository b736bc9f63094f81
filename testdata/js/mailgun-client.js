// Drives Postline's /v3/ API with the official Mailgun SDK for Node
// (mailgun.js), as software with a Mailgun driver does: only the URL and
// the key change. Called by internal/app's Mailgun tests with a JSON list
// of steps on stdin; prints one JSON line per step: {ok, result} or
// {ok: false, status, message}.
const FormData = require('form-data');
const Mailgun = require('mailgun.js');
const fs = require('fs');

async function main() {
  const [url, key] = process.argv.slice(2);
  const mg = new Mailgun(FormData).client({ username: 'api', key, url });
  const steps = JSON.parse(fs.readFileSync(0, 'utf8'));
  for (const step of steps) {
    try {
      let result;
      switch (step.call) {
        case 'messages.create': {
          const data = { ...step.data };
          if (step.attachment) {
            data.attachment = [{ filename: step.attachment.filename, data: Buffer.from(step.attachment.data) }];
          }
          if (step.inline) {
            data.inline = [{ filename: step.inline.filename, data: Buffer.from(step.inline.data) }];
          }
          result = await mg.messages.create(step.domain, data);
          break;
        }
        case 'suppressions.create':
          result = await mg.suppressions.create(step.domain, step.type, step.data);
          break;
        case 'suppressions.list': {
          const page = await mg.suppressions.list(step.domain, step.type, step.query || {});
          result = { items: page.items.map((it) => ({ ...it })), pages: Object.keys(page.pages || {}) };
          break;
        }
        case 'suppressions.get':
          result = await mg.suppressions.get(step.domain, step.type, step.address);
          break;
        case 'suppressions.destroy':
          result = await mg.suppressions.destroy(step.domain, step.type, step.address);
          break;
        case 'domains.list':
          result = await mg.domains.list();
          break;
        case 'domains.get':
          result = await mg.domains.get(step.domain);
          break;
        case 'webhooks.list':
          result = await mg.webhooks.list(step.domain, step.query || {});
          break;
        case 'webhooks.get': {
          const wh = await mg.webhooks.get(step.domain, step.id);
          result = { id: wh.id, url: wh.url, urls: wh.urls };
          break;
        }
        case 'webhooks.create': {
          const wh = await mg.webhooks.create(step.domain, step.id, step.url);
          result = { id: wh.id, url: wh.url, urls: wh.urls };
          break;
        }
        case 'webhooks.update': {
          const wh = await mg.webhooks.update(step.domain, step.id, step.urls);
          result = { id: wh.id, url: wh.url, urls: wh.urls };
          break;
        }
        case 'webhooks.destroy': {
          const wh = await mg.webhooks.destroy(step.domain, step.id);
          result = { id: wh.id, url: wh.url, urls: wh.urls };
          break;
        }
        case 'templates.create':
          result = await mg.domains.domainTemplates.create(step.domain, step.data);
          break;
        case 'templates.list': {
          const page = await mg.domains.domainTemplates.list(step.domain, step.query || {});
          result = { items: page.items.map((it) => ({ ...it })), pages: page.pages };
          break;
        }
        case 'templates.get':
          result = await mg.domains.domainTemplates.get(step.domain, step.name, step.query);
          break;
        case 'templates.update':
          result = await mg.domains.domainTemplates.update(step.domain, step.name, step.data);
          break;
        case 'templates.destroy':
          result = await mg.domains.domainTemplates.destroy(step.domain, step.name);
          break;
        case 'templates.createVersion':
          result = await mg.domains.domainTemplates.createVersion(step.domain, step.name, step.data);
          break;
        case 'templates.listVersions':
          result = await mg.domains.domainTemplates.listVersions(step.domain, step.name, step.query);
          break;
        case 'templates.getVersion':
          result = await mg.domains.domainTemplates.getVersion(step.domain, step.name, step.tag);
          break;
        case 'templates.updateVersion':
          result = await mg.domains.domainTemplates.updateVersion(step.domain, step.name, step.tag, step.data);
          break;
        case 'templates.destroyVersion':
          result = await mg.domains.domainTemplates.destroyVersion(step.domain, step.name, step.tag);
          break;
        case 'routes.create':
          result = await mg.routes.create(step.data);
          break;
        case 'routes.list':
          result = await mg.routes.list(step.query || {});
          break;
        case 'routes.get':
          result = await mg.routes.get(step.id);
          break;
        case 'routes.update':
          result = await mg.routes.update(step.id, step.data);
          break;
        case 'routes.destroy':
          result = await mg.routes.destroy(step.id);
          break;
        case 'routes.matchAddress':
          result = await mg.routes.matchAddress(step.address);
          break;
        case 'events.get':
          result = await mg.events.get(step.domain, step.query || {});
          break;
        case 'events.follow': {
          // As a poller does: follow pages.next until an empty page, wait,
          // poll that next page again; stop once `want` events were seen
          // or after `rounds` empty polls in a row.
          const seen = [];
          let query = { ...step.query };
          let empty = 0;
          while (seen.length < step.want && empty < step.rounds) {
            const page = await mg.events.get(step.domain, query);
            if (page.items.length === 0) {
              empty++;
              await new Promise((r) => setTimeout(r, step.pauseMs || 100));
            } else {
              empty = 0;
              for (const it of page.items) seen.push({ id: it.id, event: it.event, recipient: it.recipient,
                messageId: it.message.headers['message-id'], userVariables: it['user-variables'], tags: it.tags });
            }
            query = { ...step.query, page: page.pages.next.page };
          }
          result = seen;
          break;
        }
        case 'stats.getDomain':
          result = await mg.stats.getDomain(step.domain, step.query);
          break;
        case 'stats.getAccount':
          result = await mg.stats.getAccount(step.query);
          break;
        case 'domainTags.list': {
          const page = await mg.domains.domainTags.list(step.domain, step.query);
          result = { items: page.items.map((it) => ({ ...it })), pages: page.pages };
          break;
        }
        case 'domainTags.get':
          result = await mg.domains.domainTags.get(step.domain, step.tag);
          break;
        case 'domainTags.update':
          result = await mg.domains.domainTags.update(step.domain, step.tag, step.description);
          break;
        case 'domainTags.statistic':
          result = await mg.domains.domainTags.statistic(step.domain, step.tag, step.query);
          break;
        case 'domainTags.destroy':
          result = await mg.domains.domainTags.destroy(step.domain, step.tag);
          break;
        case 'validate.get':
          result = await mg.validate.get(step.address);
          break;
        case 'multipleValidation.create':
          result = await mg.validate.multipleValidation.create(step.listId, { file: { filename: 'list.csv', data: Buffer.from(step.file) } });
          break;
        case 'multipleValidation.list': {
          const page = await mg.validate.multipleValidation.list(step.query || { limit: 100 });
          result = { total: page.total, jobs: page.jobs.map((j) => ({ ...j })), pages: Object.keys(page.pages || {}) };
          break;
        }
        case 'multipleValidation.get': {
          // Polls until the list's status is step.until (or 30 s).
          const deadline = Date.now() + 30000;
          let job;
          do {
            job = await mg.validate.multipleValidation.get(step.listId);
            if (!step.until || job.status === step.until) break;
            await new Promise((r) => setTimeout(r, 100));
          } while (Date.now() < deadline);
          result = { ...job };
          break;
        }
        case 'multipleValidation.destroy':
          result = await mg.validate.multipleValidation.destroy(step.listId);
          break;
        default:
          throw new Error('unknown call ' + step.call);
      }
      console.log(JSON.stringify({ ok: true, result }));
    } catch (err) {
      console.log(JSON.stringify({ ok: false, status: err.status, message: String(err.details || err.message) }));
    }
  }
}

main().catch((err) => { console.error(err); process.exit(1); });
