-- +goose Up
-- Mailgun's template versions over Postline's: a version has a tag (unique
-- within its template; Postline's own versions get their number), a
-- comment, and the template a description (kept on every version row).
-- active marks the version sends use; exactly one per name from here on,
-- the newest until another is made active.
ALTER TABLE templates ADD COLUMN tag TEXT NOT NULL DEFAULT '';
ALTER TABLE templates ADD COLUMN comment TEXT NOT NULL DEFAULT '';
ALTER TABLE templates ADD COLUMN description TEXT NOT NULL DEFAULT '';
ALTER TABLE templates ADD COLUMN active INTEGER NOT NULL DEFAULT 0;
UPDATE templates SET tag = CAST(version AS TEXT);
UPDATE templates SET active = 1 WHERE version = (SELECT MAX(t2.version) FROM templates t2
    WHERE t2.domain_id = templates.domain_id AND t2.name = templates.name);
CREATE UNIQUE INDEX templates_tag ON templates (domain_id, name, tag);
