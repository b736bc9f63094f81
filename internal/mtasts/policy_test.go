package mtasts_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/mtasts"
)

func TestParseRecord(t *testing.T) {
	t.Parallel()
	tests := []struct {
		txt, want string
		ok        bool
	}{
		{"v=STSv1; id=20160831085700Z;", "20160831085700Z", true}, // RFC 8461 §3.1's example
		{"v=STSv1;id=abc", "abc", true},
		{"v=STSv1 ;  id=abc ; ext=1", "abc", true},
		{"v=STSv1; ext=1; id=A1b2", "A1b2", true},
		{"v=STSv1;", "", false},                               // no id
		{"v=STSv1; id=;", "", false},                          // empty id
		{"v=STSv1; id=" + strings.Repeat("a", 33), "", false}, // too long
		{"v=STSv1; id=2016-08-31", "", false},                 // not alphanumeric
		{"v=STSv1; id=a; id=b", "", false},                    // two ids
		{"v=STSv2; id=a", "", false},                          // another version
		{"id=a; v=STSv1", "", false},                          // version not first
		{"v=STSv1; garbage", "", false},                       // field without =
	}
	for _, tt := range tests {
		got, err := mtasts.ParseRecord(tt.txt)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseRecord(%q) = %q, %v; want %q, ok %v", tt.txt, got, err, tt.want, tt.ok)
		}
	}
}

func TestFindRecord(t *testing.T) {
	t.Parallel()
	tests := []struct {
		txts []string
		want string
		ok   bool
	}{
		{[]string{"v=spf1 -all", "v=STSv1; id=one"}, "one", true},   // others are ignored
		{[]string{"v=STSv1; id=one", "v=STSv1; id=two"}, "", false}, // §3.1: not exactly one
		{[]string{"v=spf1 -all"}, "", false},
		{nil, "", false},
		{[]string{"v=STSv1; id=bad-id"}, "", false},
	}
	for _, tt := range tests {
		got, err := mtasts.FindRecord(tt.txts)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("FindRecord(%q) = %q, %v; want %q, ok %v", tt.txts, got, err, tt.want, tt.ok)
		}
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		body    string
		want    mtasts.Policy
		wantErr string
	}{
		{
			name: "RFC 8461 §3.2 example (CRLF)",
			body: "version: STSv1\r\nmode: enforce\r\nmx: mail.example.com\r\nmx: *.example.net\r\nmx: backupmx.example.com\r\nmax_age: 604800\r\n",
			want: mtasts.Policy{Mode: mtasts.ModeEnforce, MX: []string{"mail.example.com", "*.example.net", "backupmx.example.com"}, MaxAge: 604800 * time.Second},
		},
		{
			name: "LF, upper case and trailing dots, unknown keys ignored",
			body: "version: STSv1\nmode: testing\nmx: MX.Example.COM.\nfuture_key: whatever\nmax_age:86400\n",
			want: mtasts.Policy{Mode: mtasts.ModeTesting, MX: []string{"mx.example.com"}, MaxAge: 86400 * time.Second},
		},
		{
			name: "mode none needs no mx",
			body: "version: STSv1\nmode: none\nmax_age: 0\n",
			want: mtasts.Policy{Mode: mtasts.ModeNone},
		},
		{
			name: "first of a repeated key counts",
			body: "version: STSv1\nmode: testing\nmode: enforce\nmx: a.example\nmax_age: 10\nmax_age: 20\n",
			want: mtasts.Policy{Mode: mtasts.ModeTesting, MX: []string{"a.example"}, MaxAge: 10 * time.Second},
		},
		{name: "no version", body: "mode: enforce\nmx: a.example\nmax_age: 10\n", wantErr: "version"},
		{name: "other version", body: "version: STSv2\nmode: enforce\nmx: a.example\nmax_age: 10\n", wantErr: "version"},
		{name: "bad mode", body: "version: STSv1\nmode: strict\nmx: a.example\nmax_age: 10\n", wantErr: "mode"},
		{name: "no max_age", body: "version: STSv1\nmode: enforce\nmx: a.example\n", wantErr: "max_age"},
		{name: "max_age past a year", body: "version: STSv1\nmode: enforce\nmx: a.example\nmax_age: 31557601\n", wantErr: "max_age"},
		{name: "negative max_age", body: "version: STSv1\nmode: enforce\nmx: a.example\nmax_age: -1\n", wantErr: "max_age"},
		{name: "enforce without mx", body: "version: STSv1\nmode: enforce\nmax_age: 10\n", wantErr: "no mx"},
		{name: "wildcard inside", body: "version: STSv1\nmode: enforce\nmx: mx.*.example\nmax_age: 10\n", wantErr: "pattern"},
		{name: "line without colon", body: "version: STSv1\nmode enforce\n", wantErr: "without ':'"},
	}
	for _, tt := range tests {
		got, err := mtasts.Parse(tt.body)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: Parse = %+v, %v; want an error about %q", tt.name, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got.Mode != tt.want.Mode || got.MaxAge != tt.want.MaxAge || !slices.Equal(got.MX, tt.want.MX) {
			t.Errorf("%s: Parse = %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
}

func TestMatches(t *testing.T) {
	t.Parallel()
	p := mtasts.Policy{Mode: mtasts.ModeEnforce, MX: []string{"mail.example.com", "*.example.net"}}
	tests := []struct {
		host string
		want bool
	}{
		{"mail.example.com", true},
		{"MAIL.Example.com.", true},
		{"other.example.com", false},
		{"example.com", false},
		{"mx1.example.net", true}, // §4.1: the wildcard stands for one label
		{"MX1.EXAMPLE.NET.", true},
		{"a.b.example.net", false},
		{"example.net", false},
		{".example.net", false},
		{"mx1.example.net.evil.test", false},
	}
	for _, tt := range tests {
		if got := p.Matches(tt.host); got != tt.want {
			t.Errorf("Matches(%q) = %v, want %v (patterns %v)", tt.host, got, tt.want, p.MX)
		}
	}
}
