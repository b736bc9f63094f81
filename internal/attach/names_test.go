package attach

import (
	"strings"
	"testing"
)

func TestSanitizeName(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"report.pdf", "report.pdf"},
		{"../../etc/passwd", "passwd"},
		{`C:\Users\bob\invoice.pdf`, "invoice.pdf"},
		{"dir/", "attachment"},
		{"..", "attachment"},
		{".", "attachment"},
		{"", "attachment"},
		{"   ", "attachment"},
		{"a..b.pdf", "a.b.pdf"},
		{"....pdf", ".pdf"},
		{"trailing. . .", "trailing"},
		{"  spaced.txt", "spaced.txt"},
		{"tab\there\x00.pdf", "tabhere.pdf"},
		{"line\r\nbreak.txt", "linebreak.txt"},
		{"invoice\u202efdp.exe", "invoicefdp.exe"},
		{"zero\u200bwidth.pdf", "zerowidth.pdf"},
		{`a<b>c:d"e|f?g*h.txt`, "a_b_c_d_e_f_g_h.txt"},
		{"bad\xffutf8.pdf", "bad_utf8.pdf"},
		{"CON", "_CON"},
		{"nul.txt", "_nul.txt"},
		{"com1.pdf", "_com1.pdf"},
		{"COM10.pdf", "COM10.pdf"},
		{"console.pdf", "console.pdf"},
		{"Überweisung – März.pdf", "Überweisung – März.pdf"},
		{".env", ".env"},
		{strings.Repeat("a", 300) + ".pdf", strings.Repeat("a", 196) + ".pdf"},
		{strings.Repeat("é", 150), strings.Repeat("é", 100)},
	}
	for _, tt := range tests {
		if got := SanitizeName(tt.in); got != tt.want {
			t.Errorf("SanitizeName(%q) = %q; want %q", tt.in, got, tt.want)
		}
		if got := SanitizeName(tt.want); got != tt.want && tt.want != "attachment" {
			t.Errorf("SanitizeName is not idempotent on %q: %q", tt.want, got)
		}
	}
}

func TestUniqueNames(t *testing.T) {
	t.Parallel()
	in := []string{"a.pdf", "a.pdf", "A.PDF", "a (2).pdf", "a.pdf", ".env", ".env", "noext", "noext", "x.tar.gz", "x.tar.gz"}
	want := []string{"a.pdf", "a (2).pdf", "A (3).PDF", "a (2) (2).pdf", "a (4).pdf", ".env", ".env (2)", "noext", "noext (2)", "x.tar.gz", "x.tar (2).gz"}
	u := namer{}
	for i, name := range in {
		if got := u.unique(name); got != want[i] {
			t.Errorf("unique #%d(%q) = %q; want %q", i, name, got, want[i])
		}
	}
}
