package shaping

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	t.Parallel()
	day := 24 * time.Hour
	good := []struct {
		in   string
		want Rate
		text string // String() of the result
	}{
		{"100/s", Rate{Count: 100, Per: time.Second}, "100/s"},
		{"100/sec", Rate{Count: 100, Per: time.Second}, "100/s"},
		{"5/second", Rate{Count: 5, Per: time.Second}, "5/s"},
		{"20/m", Rate{Count: 20, Per: time.Minute}, "20/min"},
		{"20/min", Rate{Count: 20, Per: time.Minute}, "20/min"},
		{"1/minute", Rate{Count: 1, Per: time.Minute}, "1/min"},
		{"500/h", Rate{Count: 500, Per: time.Hour}, "500/h"},
		{"2/hr", Rate{Count: 2, Per: time.Hour}, "2/h"},
		{"10000/hour", Rate{Count: 10000, Per: time.Hour}, "10000/h"},
		{"50/d", Rate{Count: 50, Per: day}, "50/day"},
		{"50/day", Rate{Count: 50, Per: day}, "50/day"},
		{"1_000/hr", Rate{Count: 1000, Per: time.Hour}, "1000/h"},
		{"1,000/hr", Rate{Count: 1000, Per: time.Hour}, "1000/h"},
		{"10/5min", Rate{Count: 10, Per: 5 * time.Minute}, "10/300s"},
		{"local:100/s", Rate{Count: 100, Per: time.Second, Local: true}, "local:100/s"},
		{"100/s,max_burst=10", Rate{Count: 100, Per: time.Second, MaxBurst: 10}, "100/s,max_burst=10"},
	}
	for _, c := range good {
		got, err := ParseRate(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseRate(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
			continue
		}
		if got.String() != c.text {
			t.Errorf("ParseRate(%q).String() = %q, want %q", c.in, got.String(), c.text)
		}
		if back, err := ParseRate(got.String()); err != nil || back != got {
			t.Errorf("ParseRate(%q) does not read its own String %q back: %+v, %v", c.in, got.String(), back, err)
		}
	}
	for _, bad := range []string{"", "100", "100/", "/s", "0/s", "-1/s", "100/week", "100/ms", "ten/s", "100/s,max_burst=x"} {
		if got, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) = %+v, want an error", bad, got)
		}
	}
	if got := (Rate{Count: 100, Per: time.Minute}).Interval(); got != 600*time.Millisecond {
		t.Errorf("Interval of 100/min = %v, want 600ms", got)
	}
}

func TestParseLimit(t *testing.T) {
	t.Parallel()
	good := []struct {
		in   any
		want Limit
	}{
		{int64(10), Limit{N: 10}},
		{"10", Limit{N: 10}},
		{"local:5", Limit{N: 5, Local: true}},
		{"1_000", Limit{N: 1000}},
	}
	for _, c := range good {
		if got, err := ParseLimit(c.in); err != nil || got != c.want {
			t.Errorf("ParseLimit(%#v) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []any{int64(0), int64(-3), "local:", "local:0", "five", 2.5, true} {
		if got, err := ParseLimit(bad); err == nil {
			t.Errorf("ParseLimit(%#v) = %+v, want an error", bad, got)
		}
	}
	if s := (Limit{N: 5, Local: true}).String(); s != "local:5" {
		t.Errorf("String = %q, want local:5", s)
	}
}

func TestParseDuration(t *testing.T) {
	t.Parallel()
	good := []struct {
		in   any
		want time.Duration
	}{
		{"90m", 90 * time.Minute},
		{"1h30m", 90 * time.Minute},
		{"60s", time.Minute},
		{"1 hour", time.Hour},
		{"1 hours", time.Hour},
		{"2 hours", 2 * time.Hour},
		{"2 hour", 2 * time.Hour},
		{"30 days", 30 * 24 * time.Hour},
		{"3 days", 3 * 24 * time.Hour},
		{"5 minutes", 5 * time.Minute},
		{"30 minutes", 30 * time.Minute},
		{"15 seconds", 15 * time.Second},
		{"1h 30m", 90 * time.Minute},
		{"1 week", 7 * 24 * time.Hour},
		{"3days", 3 * 24 * time.Hour},
		{int64(30), 30 * time.Second},
	}
	for _, c := range good {
		if got, err := ParseDuration(c.in); err != nil || got != c.want {
			t.Errorf("ParseDuration(%#v) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	// Too long for a time.Duration: an error naming the bound, never a
	// value wrapped around to a negative or a short one.
	for _, long := range []any{"99999999h", "106752 days", "213504 days", "2562048h", "2562047h 60m", int64(math.MaxInt64),
		int64(9223372037)} {
		if got, err := ParseDuration(long); err == nil || !strings.Contains(err.Error(), "at most 2562047h47m16s") {
			t.Errorf("ParseDuration(%#v) = %v, %v; want an error naming the longest duration", long, got, err)
		}
	}
	for _, bad := range []any{"", "soon", "2 fortnights", "0s", "-5m", "hours", int64(0), true} {
		if got, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%#v) = %v, want an error", bad, got)
		}
	}
	for d, want := range map[time.Duration]string{2 * time.Hour: "2h", 90 * time.Minute: "1h30m", 30 * time.Second: "30s", 72 * time.Hour: "72h"} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestParseTLSMode(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"Opportunistic", "OpportunisticInsecure", "Required", "RequiredInsecure", "Disabled"} {
		m, err := ParseTLSMode(name)
		if err != nil || m.String() != name {
			t.Errorf("ParseTLSMode(%q) = %v, %v", name, m, err)
		}
	}
	if m, err := ParseTLSMode("required"); err != nil || m != TLSRequired {
		t.Errorf("ParseTLSMode is case-insensitive: got %v, %v", m, err)
	}
	_, err := ParseTLSMode("Maybe")
	if err == nil || !strings.Contains(err.Error(), "OpportunisticInsecure") {
		t.Errorf("ParseTLSMode(Maybe) error %v should list the modes", err)
	}
	if TLSUnset.String() != "" {
		t.Errorf("unset mode prints %q", TLSUnset.String())
	}
}

func TestLimitsWithOverridesOnlyWhatIsSet(t *testing.T) {
	t.Parallel()
	base := Limits{ConnectionLimit: Limit{N: 10}, MaxDeliveriesPerConnection: 100, EnableTLS: TLSOpportunistic, EnableDANE: FlagTrue}
	got := base.With(Limits{MaxDeliveriesPerConnection: 20, EnableDANE: FlagFalse})
	want := Limits{ConnectionLimit: Limit{N: 10}, MaxDeliveriesPerConnection: 20, EnableTLS: TLSOpportunistic, EnableDANE: FlagFalse}
	if got != want {
		t.Errorf("With = %+v, want %+v", got, want)
	}
	if kv := got.KeyValues(); len(kv) != 4 || kv[0] != (KeyValue{"connection_limit", "10"}) || kv[3] != (KeyValue{"enable_dane", "false"}) {
		t.Errorf("KeyValues() = %v", kv)
	}
}

func TestParseSetting(t *testing.T) {
	t.Parallel()
	l, err := ParseSetting("connection_limit", 1)
	if err != nil || l != (Limits{ConnectionLimit: Limit{N: 1}}) {
		t.Errorf("ParseSetting(connection_limit, 1) = %+v, %v", l, err)
	}
	if l, err = ParseSetting("max_message_rate", "1/minute"); err != nil || l.MaxMessageRate != (Rate{Count: 1, Per: time.Minute}) {
		t.Errorf("ParseSetting(max_message_rate) = %+v, %v", l, err)
	}
	if _, err = ParseSetting("max_ready", 5); err == nil {
		t.Errorf("ParseSetting accepted a key Postline does not implement")
	}
	if _, err = ParseSetting("idle_timeout", "later"); err == nil {
		t.Errorf("ParseSetting accepted a bad value")
	}
}
