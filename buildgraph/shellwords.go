package buildgraph

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNeedsShell is returned (inside a [*SplitError]) by [SplitWords] when a
// command line uses something only a shell can do: a pipe, redirection,
// `;`, `&`, parentheses, `$` expansion, backquotes, globbing (`*`, `?`,
// `[`), `~` or a `#` comment. Such a command must run as `sh -c`.
var ErrNeedsShell = errors.New("needs a shell")

// SplitError is a failure of [SplitWords].
type SplitError struct {
	Offset int    // byte offset in the input where the problem is
	Msg    string // what is wrong
	Err    error  // ErrSyntax or ErrNeedsShell
}

// Error returns "at byte N: what is wrong".
func (e *SplitError) Error() string { return fmt.Sprintf("at byte %d: %s", e.Offset, e.Msg) }

// Unwrap returns ErrSyntax or ErrNeedsShell.
func (e *SplitError) Unwrap() error { return e.Err }

// SplitWords splits a command line into words the way a POSIX shell's
// tokenizer and quote removal do (XCU 2.2, 2.3, 2.6.7), and nothing more:
//
//   - blanks (space, tab, newline) separate words;
//   - a backslash outside quotes keeps the next byte literally, and a
//     backslash-newline is removed;
//   - single quotes keep everything up to the next single quote;
//   - double quotes keep everything up to the next unescaped double quote,
//     where a backslash escapes only $ ` " \ and newline;
//   - a pair of quotes with nothing between them makes an empty word.
//
// Expansions and operators are not performed: a line that would need them
// fails with a *SplitError wrapping [ErrNeedsShell], telling the caller to
// run it with `sh -c` instead. An unterminated quote or a trailing
// backslash is a *SplitError wrapping [ErrSyntax]. SplitWords never panics.
func SplitWords(s string) ([]string, error) {
	var (
		words  []string
		cur    strings.Builder
		inWord bool // cur holds a word, possibly empty ('')
	)
	needShell := func(i int, what string) error {
		return &SplitError{Offset: i, Msg: what + " needs a shell", Err: ErrNeedsShell}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case ' ', '\t', '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case '\\':
			if i+1 >= len(s) {
				return nil, &SplitError{Offset: i, Msg: "trailing backslash", Err: ErrSyntax}
			}
			i++
			if s[i] == '\n' {
				continue // line continuation
			}
			cur.WriteByte(s[i])
			inWord = true
		case '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, &SplitError{Offset: i, Msg: "unterminated single quote", Err: ErrSyntax}
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += 1 + end
			inWord = true
		case '"':
			j, err := splitDouble(s, i, &cur)
			if err != nil {
				return nil, err
			}
			i = j
			inWord = true
		case '|', '&', ';', '<', '>', '(', ')':
			return nil, needShell(i, fmt.Sprintf("unquoted %q", c))
		case '$', '`':
			return nil, needShell(i, fmt.Sprintf("expansion %q", c))
		case '*', '?', '[':
			return nil, needShell(i, fmt.Sprintf("glob %q", c))
		case '#', '~':
			if !inWord {
				return nil, needShell(i, fmt.Sprintf("word-initial %q", c))
			}
			cur.WriteByte(c)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// splitDouble copies the double-quoted string that opens at s[open] into
// cur and returns the index of its closing quote.
func splitDouble(s string, open int, cur *strings.Builder) (int, error) {
	for i := open + 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return i, nil
		case '\\':
			if i+1 < len(s) {
				switch n := s[i+1]; n {
				case '$', '`', '"', '\\':
					cur.WriteByte(n)
					i++
					continue
				case '\n':
					i++
					continue
				}
			}
			cur.WriteByte(c)
		case '$', '`':
			return 0, &SplitError{Offset: i, Msg: fmt.Sprintf("expansion %q needs a shell", c), Err: ErrNeedsShell}
		default:
			cur.WriteByte(c)
		}
	}
	return 0, &SplitError{Offset: open, Msg: "unterminated double quote", Err: ErrSyntax}
}

// QuoteWords joins words into a command line that [SplitWords] (and a POSIX
// shell) splits back into the same words: a word made only of safe bytes
// stays as it is, any other is single-quoted, with each single quote
// written as quote, backslash, quote, quote.
func QuoteWords(words []string) string {
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		quoteWord(&b, w)
	}
	return b.String()
}

func quoteWord(b *strings.Builder, w string) {
	if w != "" && strings.IndexFunc(w, func(r rune) bool { return !isSafe(r) }) < 0 {
		b.WriteString(w)
		return
	}
	b.WriteByte('\'')
	b.WriteString(strings.ReplaceAll(w, "'", `'\''`))
	b.WriteByte('\'')
}

// isSafe reports whether r needs no quoting anywhere in a word.
func isSafe(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return true
	}
	return strings.ContainsRune("_@%+=:,./-", r)
}
