package bench

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Turning a build's verbose output into a corpus.

var (
	// compilerRe matches a C or C++ compiler driver: gcc, cc, g++, clang,
	// versioned or with a target triplet.
	compilerRe = regexp.MustCompile(`^([a-z0-9_]+-[a-z0-9_]+-[a-z0-9_]+-)?(cc|gcc|c\+\+|g\+\+|clang|clang\+\+)(-[0-9.]+)?$`)
	// arRe matches the archiver.
	arRe = regexp.MustCompile(`^([a-z0-9_]+-[a-z0-9_]+-[a-z0-9_]+-)?(gcc-)?ar$`)
	// dirRe matches make -w's directory messages.
	dirRe = regexp.MustCompile(`^(?:g?make)(?:\[\d+\])?: (Entering|Leaving) directory [` + "`" + `'"](.*)['"]$`)
)

// ParseBuildLog reads a build's verbose output and returns its compile,
// archive and link commands as a corpus rooted at root (the source tree the
// build ran in). Commands run through a shell with operators (&&, |, ;,
// redirections) other than a leading "cd DIR &&" are not recorded, nor are
// outputs outside root. Dependencies: a link or archive depends on the
// earlier tasks whose outputs its arguments name, on the previous link or
// archive (so their order is kept), and, when it names no earlier object,
// on every compile since that previous link. An ar without the s modifier
// gets one, standing in for the ranlib that follows it in the build.
func ParseBuildLog(root string, r io.Reader) (*Corpus, error) {
	root = filepath.Clean(root)
	c := &Corpus{Dir: root}
	var dirs []string
	cwd := root
	byPath := map[string]string{} // absolute output → task ID
	lastLink := ""
	var compilesSince []string
	_, err := os.Stat(root)
	rootExists := err == nil
	sc := scanLines(bufio.NewReader(r))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if m := dirRe.FindStringSubmatch(line); m != nil {
			if m[1] == "Entering" {
				dirs = append(dirs, cwd)
				cwd = m[2]
			} else if len(dirs) > 0 {
				cwd, dirs = dirs[len(dirs)-1], dirs[:len(dirs)-1]
			}
			continue
		}
		for _, p := range []string{"libtool: compile:", "libtool: link:"} {
			line = strings.TrimSpace(strings.TrimPrefix(line, p))
		}
		words, ok := splitShellWords(line)
		if !ok || len(words) == 0 {
			continue
		}
		dir := cwd
		if len(words) > 3 && words[0] == "cd" && words[2] == "&&" {
			dir = absIn(cwd, words[1])
			words = words[3:]
		}
		if hasShellOperator(words) {
			continue
		}
		t, out, ok := recordTask(words, dir)
		if !ok {
			continue
		}
		if t.Compile && rootExists {
			// A sub-make run with --no-print-directory does not say where it
			// is: find the directory its source is in, and stay there.
			if d, found := findSourceDir(root, dir, t.Args); found && d != dir {
				cwd, dir = d, d
				t, out, _ = recordTask(words, dir)
			}
		}
		rel, err := filepath.Rel(root, out)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		if _, dup := byPath[out]; dup {
			continue
		}
		if t.Dir, err = filepath.Rel(root, dir); err != nil || strings.HasPrefix(t.Dir, "..") {
			continue
		}
		if t.Dir == "." {
			t.Dir = ""
		}
		t.ID, t.Output = rel, rel
		if !t.Compile {
			seen := map[string]bool{}
			namesObject := false
			for _, w := range t.Args[1:] {
				if id, ok := byPath[absIn(dir, w)]; ok && !seen[id] {
					seen[id] = true
					t.Deps = append(t.Deps, id)
					namesObject = true
				}
			}
			if !namesObject {
				for _, id := range compilesSince {
					if !seen[id] {
						seen[id] = true
						t.Deps = append(t.Deps, id)
					}
				}
			}
			if lastLink != "" && !seen[lastLink] {
				t.Deps = append(t.Deps, lastLink)
			}
			lastLink, compilesSince = t.ID, nil
		} else {
			compilesSince = append(compilesSince, t.ID)
		}
		byPath[out] = t.ID
		c.Tasks = append(c.Tasks, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the build log: %w", err)
	}
	if c.Compiles() == 0 {
		return nil, fmt.Errorf("the build log has no compile commands (is the build verbose?)")
	}
	return c, nil
}

// findSourceDir returns the directory, dir or one under root (at most
// three levels down), where the compile args's source file exists.
func findSourceDir(root, dir string, args []string) (string, bool) {
	src := ""
	for _, w := range args[1:] {
		if !strings.HasPrefix(w, "-") && isSource(w) {
			src = w
		}
	}
	if src == "" || filepath.IsAbs(src) {
		return dir, false
	}
	if _, err := os.Stat(filepath.Join(dir, src)); err == nil {
		return dir, true
	}
	found := ""
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || found != "" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			return nil
		}
		if rel, _ := filepath.Rel(root, p); strings.Count(rel, string(filepath.Separator)) >= 3 {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(p, src)); err == nil {
			found = p
			return filepath.SkipAll
		}
		return nil
	})
	return found, found != ""
}

// recordTask recognises a compile, link or archive command and returns it
// with its absolute output.
func recordTask(words []string, dir string) (CorpusTask, string, bool) {
	prog := filepath.Base(words[0])
	switch {
	case compilerRe.MatchString(prog):
		compile, src, out := false, "", ""
		for i := 1; i < len(words); i++ {
			switch w := words[i]; {
			case w == "-c":
				compile = true
			case w == "-E" || w == "-M" || w == "-MM" || w == "--version" || w == "-v" || w == "-dumpversion" || w == "-print-file-name":
				return CorpusTask{}, "", false
			case w == "-o" && i+1 < len(words):
				out = words[i+1]
				i++
			case !strings.HasPrefix(w, "-") && isSource(w):
				src = w
			}
		}
		if compile && out == "" && src != "" {
			out = strings.TrimSuffix(filepath.Base(src), filepath.Ext(src)) + ".o"
		}
		if out == "" || (compile && src == "") {
			return CorpusTask{}, "", false
		}
		return CorpusTask{Args: words, Compile: compile}, absIn(dir, out), true
	case arRe.MatchString(prog) && len(words) >= 4:
		ops := words[1]
		if !strings.ContainsAny(ops, "rq") {
			return CorpusTask{}, "", false
		}
		args := append([]string(nil), words...)
		if !strings.Contains(ops, "s") {
			args[1] = ops + "s"
		}
		return CorpusTask{Args: args}, absIn(dir, words[2]), true
	}
	return CorpusTask{}, "", false
}

func isSource(w string) bool {
	switch filepath.Ext(w) {
	case ".c", ".cc", ".cpp", ".cxx", ".C", ".S", ".s":
		return true
	}
	return false
}

func absIn(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

func hasShellOperator(words []string) bool {
	for _, w := range words {
		switch w {
		case "&&", "||", ";", "|", ">", ">>", "<", "2>", "2>&1", "&", "(", ")":
			return true
		}
		if strings.HasPrefix(w, ">") || strings.HasPrefix(w, "2>") || strings.HasSuffix(w, ";") {
			return true
		}
	}
	return false
}

// splitShellWords splits a command line into words as sh would for the
// simple cases builds print: blanks, single and double quotes, backslash.
// ok is false for unbalanced quotes or expansions it cannot do ($, `).
func splitShellWords(s string) (words []string, ok bool) {
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case ch == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, false
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case ch == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '$' || s[i] == '`' {
					return nil, false
				}
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte(`"\$`+"`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, false
			}
			inWord = true
		case ch == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case ch == '$' || ch == '`':
			return nil, false
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, true
}
