package config

import (
	"strings"
	"testing"
	"time"
)

func TestLogRetention(t *testing.T) {
	t.Parallel()
	cases := []struct {
		env  map[string]string
		args []string
		want time.Duration
		err  string
	}{
		{nil, nil, 30 * 24 * time.Hour, ""},
		{nil, []string{"--log-retention", "7d"}, 7 * 24 * time.Hour, ""},
		{map[string]string{"POSTLINE_LOG_RETENTION": "36h"}, nil, 36 * time.Hour, ""},
		{nil, []string{"--log-retention", "0"}, 0, ""},
		{nil, []string{"--log-retention", "0d"}, 0, ""},
		{nil, []string{"--log-retention", "30m"}, 0, "log-retention: must be 0 (keep forever) or at least 1h"},
		{nil, []string{"--log-retention", "-2h"}, 0, "log-retention: must be 0"},
		{map[string]string{"POSTLINE_LOG_RETENTION": "a week"}, nil, 0, "POSTLINE_LOG_RETENTION"},
		{nil, []string{"--log-retention", "xd"}, 0, "invalid value"},
	}
	for _, c := range cases {
		cfg, err := load(t, c.env, c.args...)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("load(%v, %v) error = %v, want it to mention %q", c.env, c.args, err, c.err)
			}
			continue
		}
		if err != nil || cfg.LogRetention != c.want {
			t.Errorf("load(%v, %v) = %s, %v; want %s", c.env, c.args, cfg.LogRetention, err, c.want)
		}
	}
}
