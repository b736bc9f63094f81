package attach

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/postline/postline/internal/apperr"
)

func TestParseOptionsValid(t *testing.T) {
	t.Parallel()
	center := Watermark{}
	tests := []struct {
		raw  string
		want Options
	}{
		{"", Options{Watermark: center}},
		{"  \n", Options{Watermark: center}},
		{"null", Options{Watermark: center}},
		{"{}", Options{Watermark: center}},
		{`{"compress":true}`, Options{Compress: true, Watermark: center}},
		{`{"compress":null,"password":null,"watermark":null}`, Options{Watermark: center}},
		{`{"password":""}`, Options{Watermark: center}},
		{`{"password":"12345678"}`, Options{Password: "12345678", Watermark: center}},
		{`{"password":"` + strings.Repeat("é", 128) + `"}`, Options{Password: strings.Repeat("é", 128), Watermark: center}},
		{`{"watermark":{"enabled":true,"text":"  Draft  "}}`, Options{Watermark: Watermark{true, "Draft", PositionCenter}}},
		{`{"watermark":{"enabled":false}}`, Options{Watermark: center}},
		{`{"watermark":{"enabled":false,"position":"top-left"}}`, Options{Watermark: Watermark{Position: PositionTopLeft}}},
		{`{"watermark":{"enabled":true,"text":"X","position":"diagonal"}}`, Options{Watermark: Watermark{true, "X", PositionDiagonal}}},
		{`{"watermark":{"enabled":true,"text":"` + strings.Repeat("ж", 200) + `","position":""}}`,
			Options{Watermark: Watermark{true, strings.Repeat("ж", 200), PositionCenter}}},
	}
	for _, p := range Positions {
		tests = append(tests, struct {
			raw  string
			want Options
		}{fmt.Sprintf(`{"watermark":{"enabled":true,"text":"T","position":%q}}`, p), Options{Watermark: Watermark{true, "T", p}}})
	}
	for _, tt := range tests {
		got, err := ParseOptions(tt.raw)
		if err != nil || got != tt.want {
			t.Errorf("ParseOptions(%.60q) = %v, %v; want %v", tt.raw, got, err, tt.want)
		}
	}
}

func TestParseOptionsErrors(t *testing.T) {
	t.Parallel()
	const (
		top, comp, pw = "attachment_options", "attachment_options.compress", "attachment_options.password"
		wm, en, text  = "attachment_options.watermark", "attachment_options.watermark.enabled", "attachment_options.watermark.text"
		pos           = "attachment_options.watermark.position"
	)
	tests := []struct {
		raw    string
		fields []string
	}{
		{`{`, []string{top}},
		{`compress=true`, []string{top}},
		{`[]`, []string{top}},
		{`"x"`, []string{top}},
		{`true`, []string{top}},
		{`{} {}`, []string{top}},
		{`{"compress":"yes"}`, []string{comp}},
		{`{"compress":1}`, []string{comp}},
		{`{"password":12345678}`, []string{pw}},
		{`{"password":"short"}`, []string{pw}},
		{`{"password":"` + strings.Repeat("a", 129) + `"}`, []string{pw}},
		{`{"pasword":"12345678"}`, []string{"attachment_options.pasword"}},
		{`{"watermark":"on"}`, []string{wm}},
		{`{"watermark":[]}`, []string{wm}},
		{`{"watermark":{"enabled":"true","text":"x"}}`, []string{en}},
		{`{"watermark":{"enabled":true}}`, []string{text}},
		{`{"watermark":{"enabled":true,"text":"   "}}`, []string{text}},
		{`{"watermark":{"enabled":true,"text":"\u200b"}}`, []string{text}},
		{`{"watermark":{"enabled":true,"text":42}}`, []string{text}},
		{`{"watermark":{"enabled":true,"text":"` + strings.Repeat("x", 201) + `"}}`, []string{text}},
		{`{"watermark":{"enabled":false,"text":"` + strings.Repeat("x", 201) + `"}}`, []string{text}},
		{`{"watermark":{"enabled":true,"text":"a\nb"}}`, []string{text}},
		{`{"watermark":{"enabled":true,"text":"x","position":"middle"}}`, []string{pos}},
		{`{"watermark":{"enabled":true,"text":"x","position":"Center"}}`, []string{pos}},
		{`{"watermark":{"enabled":true,"text":"x","position":3}}`, []string{pos}},
		{`{"watermark":{"enabled":true,"text":"x","colour":"red"}}`, []string{"attachment_options.watermark.colour"}},
		{`{"compress":0,"password":"x","watermark":{"enabled":1,"position":"?"}}`, []string{comp, pw, en, pos}},
	}
	for _, tt := range tests {
		got, err := ParseOptions(tt.raw)
		e, ok := apperr.As(err)
		if !ok || e.Code != apperr.Invalid {
			t.Errorf("ParseOptions(%.60q) = %v, %v; want an Invalid error", tt.raw, got, err)
			continue
		}
		if len(e.Fields) != len(tt.fields) {
			t.Errorf("ParseOptions(%.60q) fields = %v; want %v", tt.raw, e.Fields, tt.fields)
		}
		for _, f := range tt.fields {
			if len(e.Fields[f]) == 0 {
				t.Errorf("ParseOptions(%.60q) fields = %v; want a problem for %s", tt.raw, e.Fields, f)
			}
		}
		if got != (Options{}) {
			t.Errorf("ParseOptions(%.60q) returned %v with an error; want zero Options", tt.raw, got)
		}
	}
}

func TestOptionsNeverShowPassword(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-very-secret"
	o, err := ParseOptions(`{"password":"` + secret + `","watermark":{"enabled":true,"text":"x"}}`)
	if err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("send", "opts", o)
	for _, s := range []string{fmt.Sprint(o), fmt.Sprintf("%+v", o), fmt.Sprintf("%#v", o), logged.String()} {
		if strings.Contains(s, secret) {
			t.Errorf("password shown in %q", s)
		}
	}
	_, err = ParseOptions(`{"password":"short"}`)
	if err == nil || strings.Contains(err.Error(), "short") {
		t.Errorf("error %v shows the password", err)
	}
}

func FuzzParseOptions(f *testing.F) {
	for _, s := range []string{"", "null", "{}", `{"compress":true,"password":"12345678"}`,
		`{"watermark":{"enabled":true,"text":"Confidential","position":"diagonal"}}`, `{"watermark":{"text":1}}`, "[", `{"a":{}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		o, err := ParseOptions(raw)
		if err != nil {
			if e, ok := apperr.As(err); !ok || e.Code != apperr.Invalid || len(e.Fields) == 0 {
				t.Fatalf("ParseOptions(%q) error %v is not a field error", raw, err)
			}
			return
		}
		fe := apperr.FieldErrors{}
		o.check(fe)
		if len(fe) > 0 || (o.Watermark.Enabled && o.Watermark.Position == "") {
			t.Fatalf("ParseOptions(%q) = %v, which fails its own checks: %v", raw, o, fe)
		}
	})
}
