// Verifies one webhook post with the Standard Webhooks reference library.
// Usage: node verify-standardwebhook.js SECRET HEADERS_JSON_FILE BODY_FILE
// Exit 0 and prints the parsed payload's event count when it verifies.
const fs = require("fs");
const { Webhook } = require("standardwebhooks");
const [secret, headersFile, bodyFile] = process.argv.slice(2);
const headers = JSON.parse(fs.readFileSync(headersFile, "utf8"));
const body = fs.readFileSync(bodyFile, "utf8");
const payload = new Webhook(secret).verify(body, headers);
console.log("verified " + payload.events.length + " event(s)");
