package config

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func load(t *testing.T, env map[string]string, args ...string) (Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	l := Register(fs, func(k string) string { return env[k] })
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	return l.Load()
}

// Precedence: defaults < file < environment < flags.
func TestPrecedence(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "postline.json")
	os.WriteFile(file, []byte(`{"addr":"127.0.0.1:9000","rate-domain-per-minute":30,"retry-schedule":["1s","2s"],"log-format":"json"}`), 0o600)
	env := map[string]string{"POSTLINE_CONFIG": file, "POSTLINE_RATE_DOMAIN_PER_MINUTE": "40", "POSTLINE_LOG_FORMAT": "text"}
	cfg, err := load(t, env, "--log-format", "json")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "127.0.0.1:9000" || cfg.RateDomainPerMinute != 40 || cfg.LogFormat != "json" ||
		len(cfg.RetrySchedule) != 2 || cfg.RetrySchedule[1] != 2*time.Second || cfg.RateValidationPerHour != 1000 {
		t.Fatalf("got %+v", cfg)
	}
	wd, _ := os.Getwd()
	if want := "sqlite:" + filepath.Join(wd, "postline-data", "postline.db"); cfg.Database() != want || cfg.EffectiveRateStore() != "memory" {
		t.Fatalf("derived: %s %s; want %s (the default data dir resolved once, absolute) and memory", cfg.Database(), cfg.EffectiveRateStore(), want)
	}
	if cfg.Source("rate-domain-per-minute") != "POSTLINE_RATE_DOMAIN_PER_MINUTE" || cfg.Source("log-format") != "--log-format" ||
		cfg.Source("addr") != file+": addr" || cfg.Source("data-dir") != "" {
		t.Fatalf("sources: %q %q %q %q", cfg.Source("rate-domain-per-minute"), cfg.Source("log-format"), cfg.Source("addr"), cfg.Source("data-dir"))
	}
	cfg, _ = load(t, nil, "--database-url", "sqlite:rel/x.db")
	if want := "sqlite:" + filepath.Join(wd, "rel", "x.db"); cfg.Database() != want {
		t.Fatalf("relative sqlite URL = %s, want %s", cfg.Database(), want)
	}
	cfg, _ = load(t, nil, "--database-url", "postgres://u:p@127.0.0.1/db")
	if !cfg.IsPostgres() || cfg.EffectiveRateStore() != "database" {
		t.Fatalf("postgres defaults: %+v", cfg)
	}
}

func TestErrorsNameTheSetting(t *testing.T) {
	t.Parallel()
	cases := []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"--addr", "nope"}, "addr: want host:port"},
		{nil, []string{"--database-url", "mysql://x"}, "database-url: want sqlite:PATH or postgres://"},
		{nil, []string{"--database-url", "mysql://u:secret@x"}, "xxxxx"},
		{map[string]string{"POSTLINE_RATE_VALIDATION_PER_HOUR": "abc"}, nil, "POSTLINE_RATE_VALIDATION_PER_HOUR"},
		{nil, []string{"--rate-store", "redis"}, "redis-url: required"},
		{nil, []string{"--retry-schedule", "1m,-5s"}, "retry-schedule: delays must be positive"},
		{nil, []string{"--mx-port", "0"}, "mx-port: must be 1..65535"},
		{nil, []string{"--public-url", "ftp://x"}, "public-url"},
		{map[string]string{"POSTLINE_CONFIG": "/nonexistent/x.json"}, nil, "no such file"},
	}
	for _, c := range cases {
		_, err := load(t, c.env, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("load(%v, %v) error = %v, want it to mention %q", c.env, c.args, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("error leaks a password: %v", err)
		}
	}
}

// Byte settings take a count or a binary unit, from flags and the
// environment alike; a bad one names the setting.
func TestByteSettings(t *testing.T) {
	t.Parallel()
	cfg, err := load(t, map[string]string{"POSTLINE_ACCOUNT_DAILY_BYTES": "2 GiB"}, "--max-rendered-bytes-per-request", "1MiB")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxRenderedBytesPerRequest != 1<<20 || cfg.AccountDailyBytes != 2<<30 {
		t.Errorf("got %d and %d", cfg.MaxRenderedBytesPerRequest, cfg.AccountDailyBytes)
	}
	if cfg, _ := load(t, nil); cfg.MaxRenderedBytesPerRequest != 100<<20 || cfg.AccountDailyBytes != 10<<30 {
		t.Errorf("defaults %d and %d, want 100 MiB and 10 GiB", cfg.MaxRenderedBytesPerRequest, cfg.AccountDailyBytes)
	}
	cfg, err = load(t, map[string]string{"POSTLINE_SPOOL_MAX_BYTES": "2 GiB"}, "--spool-memory", "8MiB", "--spool-processing-memory", "100MiB")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SpoolMemory != 8<<20 || cfg.SpoolMaxBytes != 2<<30 || cfg.SpoolProcessingMemory != 100<<20 {
		t.Errorf("spool budgets %d, %d, %d", cfg.SpoolMemory, cfg.SpoolMaxBytes, cfg.SpoolProcessingMemory)
	}
	if cfg, _ := load(t, nil); cfg.SpoolMemory != 64<<20 || cfg.SpoolMaxBytes != 4<<30 || cfg.SpoolProcessingMemory != 512<<20 {
		t.Errorf("spool defaults %d, %d, %d, want 64 MiB, 4 GiB, 512 MiB", cfg.SpoolMemory, cfg.SpoolMaxBytes, cfg.SpoolProcessingMemory)
	}
	for _, args := range [][]string{{"--max-rendered-bytes-per-request", "100MB"}, {"--account-daily-bytes", "-1"},
		{"--account-daily-bytes", "9999999TiB"}, {"--max-rendered-bytes-per-request", "1000"},
		{"--spool-memory", "1KiB"}, {"--spool-max-bytes", "1000"}, {"--spool-processing-memory", "12 apples"}} {
		if _, err := load(t, nil, args...); err == nil || !strings.Contains(err.Error(), args[0][2:]) {
			t.Errorf("%v: %v, want an error naming the setting", args, err)
		}
	}
}

// --shaping-file repeats, POSTLINE_SHAPING_FILE separates with commas, and
// the flags replace the environment's list rather than add to it.
func TestShapingFiles(t *testing.T) {
	t.Parallel()
	wd, _ := os.Getwd()
	cfg, err := load(t, nil, "--shaping-file", "/etc/kumo/shaping.toml", "--shaping-file", "mine.toml")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/etc/kumo/shaping.toml", filepath.Join(wd, "mine.toml")}; !slices.Equal(cfg.ShapingFiles, want) {
		t.Errorf("flags: %q, want %q (in order, relative ones made absolute)", cfg.ShapingFiles, want)
	}
	env := map[string]string{"POSTLINE_SHAPING_FILE": "/a.toml, /b.toml"}
	if cfg, _ = load(t, env); !slices.Equal(cfg.ShapingFiles, []string{"/a.toml", "/b.toml"}) {
		t.Errorf("env: %q", cfg.ShapingFiles)
	}
	if cfg, _ = load(t, env, "--shaping-file", "/c.toml"); !slices.Equal(cfg.ShapingFiles, []string{"/c.toml"}) {
		t.Errorf("flag over env: %q, want only the flag's", cfg.ShapingFiles)
	}
	if cfg, _ = load(t, nil); cfg.ShapingFiles != nil {
		t.Errorf("default: %q, want none (the built-in rules)", cfg.ShapingFiles)
	}
}
