package templates

import (
	"fmt"
	"time"

	"github.com/mailgun/raymond/v2/lexer"

	"github.com/postline/postline/internal/apperr"
)

// What bounds a template's cost. raymond has no limits and no context:
// its parser concatenates a path's text segment by segment (quadratic in
// the path's length), its evaluator slows with each nested block, and
// {{#each}} repeats a body as often as a list is long. So:
//
//   - a part's source is at most MaxPartBytes, and it is scanned (linear)
//     before raymond parses it: blocks and subexpressions nested past
//     MaxDepth, a path of more than MaxPathSegments, or more than MaxTokens
//     tokens are refused there (a parsed token takes ~160 bytes: a 500 KB
//     part of {{a}} parsed to ~25 MB, twice over while it is compiled);
//   - rendering checks a deadline (RenderTimeout) in every block helper
//     and every {{#each}} iteration, and stops itself past it. Between two
//     checks it evaluates at most the template once over (no loop), which
//     the size, depth and path bounds keep to milliseconds; output is
//     bounded by MaxOutputBytes and maxExpansion.
const (
	MaxDepth        = 100
	MaxPathSegments = 32
	MaxTokens       = 50_000
	RenderTimeout   = 2 * time.Second
)

// tokenBytes is about what one token of a part takes once parsed (measured:
// 140 to 160 bytes), for the memory a compiled template holds.
const tokenBytes = 160

// precheck scans a part with raymond's own lexer (so it sees the tokens
// the parser will) and refuses what would make parsing or rendering
// expensive. It also refuses block tokens with no block to belong to:
// raymond's parser, failing before the end of its input, leaves its lexer
// goroutine blocked for good, holding the source; those are the commonest
// such failures. It returns how many tokens src has.
func precheck(src, field string) (int, error) {
	l := lexer.Scan(src)
	var refusal error
	fail := func(format string, args ...any) {
		if refusal == nil {
			refusal = apperr.Field(field, fmt.Sprintf("The %s template "+format, append([]any{field}, args...)...))
		}
	}
	// levels holds, per open block, how deep it nests what it holds: one,
	// and one more for each {{else if}} of its chain.
	var levels []int
	depth, sexpr, segments, tokens := 0, 0, 0, 0
	for prev := lexer.TokenEOF; ; {
		tok := l.NextToken()
		if tok.Kind == lexer.TokenEOF || tok.Kind == lexer.TokenError {
			return tokens, refusal
		}
		if tokens++; tokens > MaxTokens {
			fail("has more than %d Handlebars tokens (expressions, their parts and the text between them).", MaxTokens)
		}
		if refusal != nil {
			continue // read on: the lexer goroutine ends only at the end
		}
		switch tok.Kind {
		case lexer.TokenOpenBlock, lexer.TokenOpenInverse:
			levels = append(levels, 1)
			depth++
		case lexer.TokenOpenInverseChain, lexer.TokenInverse:
			if len(levels) == 0 {
				fail("has an {{else}} outside any block.")
			} else if tok.Kind == lexer.TokenOpenInverseChain {
				levels[len(levels)-1]++
				depth++
			}
		case lexer.TokenOpenEndBlock:
			if len(levels) == 0 {
				fail("closes a block that is not open.")
				continue
			}
			depth -= levels[len(levels)-1]
			levels = levels[:len(levels)-1]
		case lexer.TokenOpenSexpr:
			sexpr++
		case lexer.TokenCloseSexpr:
			if sexpr--; sexpr < 0 {
				fail("closes a parenthesis that is not open.")
			}
		case lexer.TokenClose, lexer.TokenCloseUnescaped:
			if sexpr != 0 {
				fail("leaves a parenthesis open.")
			}
			sexpr = 0
		}
		switch {
		case tok.Kind == lexer.TokenID && prev == lexer.TokenSep:
			segments++
		case tok.Kind == lexer.TokenID:
			segments = 1
		case tok.Kind != lexer.TokenSep:
			segments = 0
		}
		if segments > MaxPathSegments {
			fail("has a path of more than %d segments (a.b.c or ../../x).", MaxPathSegments)
		}
		if depth+sexpr > MaxDepth {
			fail("nests blocks and subexpressions more than %d deep.", MaxDepth)
		}
		prev = tok.Kind
	}
}
