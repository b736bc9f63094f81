// Sends one message through Postline's SMTP submission port with
// nodemailer, as an application configured for any SMTP server would:
// STARTTLS, AUTH with the login and an API key, an HTML body and an
// attachment. Prints the server's answer as JSON.
const nodemailer = require('nodemailer');

async function main() {
  const [host, port, user, pass, to] = process.argv.slice(2);
  const transport = nodemailer.createTransport({
    host, port: Number(port), secure: false, requireTLS: true,
    auth: { user, pass },
    tls: { rejectUnauthorized: false }, // the server's self-signed loopback certificate
  });
  const info = await transport.sendMail({
    from: '"Shop" <orders@shop.example.com>', to, subject: 'From nodemailer',
    text: 'Hello from nodemailer', html: '<p>Hello from <b>nodemailer</b></p>',
    attachments: [{ filename: 'note.txt', content: 'NOTE 7' }],
    headers: { 'X-Postline-Tag': 'nodemailer' },
  });
  console.log(JSON.stringify({ messageId: info.messageId, accepted: info.accepted, response: info.response }));
}

main().catch((err) => { console.error(err.message); process.exit(1); });
