package validation

import (
	"testing"
	"time"

	"github.com/postline/postline/internal/emailaddr"
)

// Adding any feature (or raising a graded one) never lowers the score:
// checked from every combination of the other features.
func TestScoreMonotone(t *testing.T) {
	t.Parallel()
	setters := []struct {
		name string
		set  func(*features, float64)
	}{
		{"trap_local", func(f *features, x float64) { f.TrapLocal = x }},
		{"hard_bounce", func(f *features, x float64) { f.HardBounce = x }},
		{"typo_domain", func(f *features, x float64) { f.TypoDomain = x }},
		{"random_local", func(f *features, x float64) { f.RandomLocal = x }},
		{"disposable", func(f *features, x float64) { f.Disposable = x }},
		{"role_local", func(f *features, x float64) { f.RoleLocal = x }},
		{"implicit_mx", func(f *features, x float64) { f.ImplicitMX = x }},
	}
	levels := []float64{0, 0.25, 0.5, 1}
	for mask := range 1 << len(setters) {
		var base features
		for i, s := range setters {
			if mask&(1<<i) != 0 {
				s.set(&base, 1)
			}
		}
		for i, s := range setters {
			if mask&(1<<i) != 0 {
				continue
			}
			prev := -1.0
			for _, x := range levels {
				f := base
				s.set(&f, x)
				got := f.score()
				if got < prev || got < 0 || got > 1 {
					t.Errorf("base %+v, %s=%v: score %v after %v", base, s.name, x, got, prev)
				}
				prev = got
			}
		}
	}
	if got := (features{}).score(); got != 0.018 {
		t.Errorf("score with no feature = %v, want 0.018", got)
	}
	if got := (features{TrapLocal: 1}).score(); got != 0.5 {
		t.Errorf("score with trap_local only = %v, want 0.5", got)
	}
}

func TestRandomness(t *testing.T) {
	t.Parallel()
	tests := []struct {
		local    string
		min, max float64
	}{
		{"jane", 0, 0},
		{"john.smith", 0, 0},
		{"christopher.johnson", 0, 0.2},
		{"john1985", 0, 0},     // trailing year: one digit run
		{"5551234567", 0, 0.1}, // digits only
		{"a8f3k2j9", 1, 1},     // interleaved digits
		{"x7k2q9vb3z8w", 0.6, 1},
		{"qwhrtzplkmnbvcxyd", 0.9, 1}, // 17 distinct letters: high entropy
		{"a8f3k2j9+newsletter", 1, 1}, // the tag is ignored
	}
	for _, tt := range tests {
		if got := randomness(tt.local); got < tt.min || got > tt.max {
			t.Errorf("randomness(%q) = %.3f, want in [%v, %v]", tt.local, got, tt.min, tt.max)
		}
	}
}

func TestTrapLocal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		local string
		want  bool
	}{
		{"spamtrap", true}, {"Spam-Trap", true}, {"my.honeypot.1", true},
		{"trap", true}, {"traps42", true}, {"abuse", true}, {"spam+x", true},
		{"bootstrap", false}, {"trapeze", false}, {"jane", false}, {"spamalot", false},
	}
	for _, tt := range tests {
		if got := isTrapLocal(tt.local); got != tt.want {
			t.Errorf("isTrapLocal(%q) = %v, want %v", tt.local, got, tt.want)
		}
	}
}

func TestDamerau(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int
	}{
		{"gmail.com", "gmail.com", 0}, {"gmial.com", "gmail.com", 1}, {"gmai.com", "gmail.com", 1},
		{"gmaill.com", "gmail.com", 1}, {"gnail.com", "gmail.com", 1}, {"", "abc", 3},
		{"hotmial.con", "hotmail.com", 2}, {"ca", "abc", 3},
	}
	for _, tt := range tests {
		if got := damerau(tt.a, tt.b, 99); got != tt.want {
			t.Errorf("damerau(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := damerau(tt.a, tt.b, 1); got != min(tt.want, 2) {
			t.Errorf("damerau(%q, %q, limit 1) = %d, want %d", tt.a, tt.b, got, min(tt.want, 2))
		}
	}
}

func TestSuggestGuards(t *testing.T) {
	t.Parallel()
	tests := []struct{ domain, want string }{
		{"gmial.com", "j@gmail.com"}, {"gmial.con", "j@gmail.com"}, {"yhaoo.com", "j@yahoo.com"},
		{"hotmal.com", "j@hotmail.com"}, {"outlookk.com", "j@outlook.com"}, {"aol.con", "j@aol.com"},
		{"iclod.com", "j@icloud.com"}, {"example-shop.cmo", "j@example-shop.com"},
		{"gmail.com", ""}, {"mail.com", ""}, {"email.com", ""}, {"ymail.com", ""}, // real providers
		{"gmx.at", ""}, {"hotmail.fr", ""}, {"yahoo.co.jp", ""}, // provider families
		{"aon.com", ""}, {"msm.com", ""}, // 3-letter providers: TLD fixes only
		{"gmail.co", "j@gmail.com"}, {"yahooo.com", "j@yahoo.com"},
		{"yahoooo.com", ""}, // distance 2 from a 5-letter label
		{"acme.com", ""}, {"me.co", ""},
	}
	for _, tt := range tests {
		a, err := emailaddr.Parse("j@" + tt.domain)
		if err != nil {
			t.Fatal(err)
		}
		if got := suggest(a); got != tt.want {
			t.Errorf("suggest(j@%s) = %q, want %q", tt.domain, got, tt.want)
		}
	}
}

func TestLRU(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newLRU(2)
	c.put("a", Result{Email: "a"}, now.Add(time.Hour))
	c.put("b", Result{Email: "b"}, now.Add(time.Minute))
	c.get("a", now)                                    // a is now most recent
	c.put("c", Result{Email: "c"}, now.Add(time.Hour)) // evicts b
	for _, tt := range []struct {
		key  string
		at   time.Time
		want bool
	}{
		{"a", now, true}, {"b", now, false}, {"c", now, true},
		{"c", now.Add(time.Hour), false}, // expiry is exclusive
	} {
		if _, ok := c.get(tt.key, tt.at); ok != tt.want {
			t.Errorf("get(%q, %v) = %v, want %v", tt.key, tt.at, ok, tt.want)
		}
	}
	if c.len() != 1 {
		t.Errorf("len = %d after eviction and expiry, want 1", c.len())
	}
}

func TestCacheKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode  Mode
		email string
		want  string
	}{
		{ModeStandard, "a@X.com", "standard:a@x.com"},
		{ModeStrict, "A@x.com", "strict:a@x.com"}, // case folded: nothing cached depends on it
		{ModeStandard, `"a"@x.com`, "standard:a@x.com#quoted_string"},
		{ModeStandard, `"a b"@x.com`, `standard:"a b"@x.com#quoted_string`},
		{ModeStandard, `a(c)@x.com`, "standard:a@x.com#comment,cfws_near_at"},
	}
	for _, tt := range tests {
		a, err := emailaddr.Parse(tt.email)
		if err != nil {
			t.Fatal(err)
		}
		if got := cacheKey(tt.mode, a); got != tt.want {
			t.Errorf("cacheKey(%s, %q) = %q, want %q", tt.mode, tt.email, got, tt.want)
		}
	}
}
