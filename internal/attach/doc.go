// Package attach processes the attachments of a transactional send: it
// parses attachment_options, checks the files up front, draws watermarks on
// PDFs and images, and packs everything into one ZIP, AES-256 encrypted when
// a password is given. It is pure: no HTTP, no SQL, no files, no network.
//
// # Options (ParseOptions)
//
// attachment_options is a JSON object; "" (or white space) and null mean no
// processing. Fields, all optional, null meaning absent:
//
//	compress            boolean  one ZIP archive of all attachments
//	password            string   8 to 128 characters (Unicode code points);
//	                             "" means none; implies the archive
//	watermark.enabled   boolean
//	watermark.text      string   trimmed; required (some visible character)
//	                             when enabled; at most 200 characters; no
//	                             control characters (no line breaks)
//	watermark.position  string   center (default; also ""), top-left,
//	                             top-right, bottom-left, bottom-right,
//	                             diagonal (exact, lower-case)
//
// Unknown fields are rejected, not ignored: a misspelt "pasword" must not
// send the files unprotected. All problems are reported at once in an
// apperr.Invalid error whose Fields keys are "attachment_options" (not JSON,
// not an object) or "attachment_options.<field>" (wrong type, out of range,
// unknown). Options redacts Password in String, GoString and LogValue, and
// no error of this package contains it.
//
// # Checks (Validate)
//
// Only watermarking inspects file contents. A file's kind comes from its
// media type (application/pdf; image/png, image/jpeg), else its extension
// (.pdf; .png, .jpg, .jpeg, .jpe, .jfif), else, for a missing or
// application/octet-stream type, its magic bytes; anything else is passed
// on unchanged. With the watermark enabled:
//
//   - a PDF must parse (pdfcpu, relaxed validation, resource limits lowered
//     to suit a 10 MiB attachment) and must not be encrypted, even when it
//     opens without a password: watermarking would drop its protection;
//   - an image header must decode as PNG or JPEG (whatever the declared
//     one) with at most MaxWatermarkPixels (25 megapixels, 16-bit images counting double); larger images
//     are refused rather than sent without the requested watermark;
//   - the text must be drawable: on PDFs the standard Helvetica-Bold with
//     WinAnsiEncoding (Western European characters, including € and curly
//     quotes), on images Go Bold (Latin, Greek, Cyrillic).
//
// File problems are reported under "attachments" as `"name" problem`, the
// name sanitised and quoted; text problems under
// "attachment_options.watermark.text". Garbage never panics: pdfcpu runs
// under recover, and image decoders read the header first.
//
// # Processing (Process)
//
// Files are processed one at a time, in order, checking ctx in between.
// Output names are always sanitised (SanitizeName). Watermarks:
//
//   - PDF: a text stamp on every page, drawn on top of the content (a
//     watermark behind it would vanish under scanned pages), grey at 35 %
//     opacity; 60 % of the page width in the centre, 30 % in a corner
//     (18 pt margins), 80 % along the lower-left to upper-right diagonal.
//     pdfcpu reads the two characters `\n` in the text as a line break.
//   - PNG and JPEG: the text in Go Bold, a 30 % black shadow under a 55 %
//     white fill so that it shows on any background; 60 % of the width in
//     the centre (at most 20 % of the height tall), 30 % of the width in a
//     corner (at most 8 %) with a margin of 3 % of the shorter side, 70 % of
//     the diagonal along it. The EXIF orientation is honoured, so the text
//     is upright where viewers show the picture. The image is re-encoded in
//     its own format (JPEG at quality 92) keeping its ICC profile, EXIF and
//     XMP (JPEG APP1/APP2; PNG iCCP, sRGB, gAMA, cHRM, pHYs, eXIf); the EXIF
//     thumbnail is unlinked because it would show the unmarked picture.
//     An animated PNG keeps only its first frame.
//
// A file whose watermark fails is an apperr.Invalid error naming it, like
// Validate's. With Compress or a Password (and at least one file) all files
// go into one ArchiveName ("attachments.zip", application/zip): entries
// deflated, or stored when that does not shrink them (for files over 512 KiB
// a 128 KiB sample decides, so JPEGs and ZIP-based documents cost no full
// deflate pass), in input order, names sanitised and made unique
// case-insensitively ("a.pdf", "a (2).pdf", ...).
//
// # AES-256 ZIP (WinZip AE-2)
//
// With a Password every entry is encrypted as WinZip's AE-2, which 7-Zip,
// WinZip and macOS's Archive Utility open: a random 16-byte salt;
// PBKDF2-HMAC-SHA1 with 1000 iterations gives 66 bytes: the AES-256 key,
// the HMAC-SHA1 key and a 2-byte password verifier; the compressed data is
// encrypted with AES-CTR whose 128-bit counter is little-endian and starts
// at 1; the entry data is salt ‖ verifier ‖ ciphertext ‖ the first 10 bytes
// of HMAC-SHA1(ciphertext). Headers: method 99, flag 0x1, CRC-32 0 (AE-2),
// and the extra field 0x9901 (size 7: version 2, "AE", strength 3, the real
// method). Names and sizes stay visible, as in every ZIP. SHA-1 and PBKDF2
// at 1000 iterations are what the format fixes; the password's strength is
// the protection, hence the 8-character minimum.
//
// # Costs
//
// The HTTP layer bounds the input (10 MiB per file, 25 MiB per request).
// A watermarked image needs its decoded pixels (1.5 to 4 bytes each, up to
// 100 MB at 25 megapixels) plus the overlay masks; see bench_test.go for
// measured times.
package attach
