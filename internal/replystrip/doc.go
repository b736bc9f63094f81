// Package replystrip cuts a reply down to what its writer added: the text
// above the quoted message and the signature, as Mailgun's stripped-text,
// stripped-signature and stripped-html fields and Postmark's
// StrippedTextReply present it.
//
// Text (Text) is cut at the first line that starts a quote:
//   - an attribution "On ... wrote:" (also wrapped over two lines, and the
//     same shape in a few other languages' "... schrieb:", "... a écrit :");
//   - "-----Original Message-----" and similar dashed markers;
//   - Outlook's header block: a "From:" line followed within the next
//     lines by "Sent:" or "Date:", and "To:" or "Subject:";
//   - a run of lines quoted with ">" that goes on to the end (quoted lines
//     between new text, as in an interleaved reply, are kept).
//
// What remains is split at the last signature separator ("-- " alone on a
// line, RFC 3676 §4.3; "--" without the space is accepted too): the part
// after it is the signature. Both parts are trimmed of surrounding blank
// lines. Every output is a substring of the input with line endings
// normalised to "\n": the stripper never invents text.
//
// HTML (HTML) is cut at the first element that starts a quote in the
// common clients' markup: a <blockquote>, Gmail's gmail_quote, Outlook's
// divRplyFwdMsg, Apple Mail's and Thunderbird's moz-cite-prefix, or the
// "-----Original Message-----" marker. It is cut on the raw markup, not
// re-rendered: the part kept may leave elements unclosed, which browsers
// and HTML parsers close themselves.
package replystrip
