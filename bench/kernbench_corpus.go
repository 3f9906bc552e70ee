package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Corpus is a build, fixed once: the files it needs written (for a
// generated project) and the commands that build it, with their
// dependencies. kernbench hands the same commands to every runner: as a
// numasteal build graph, a Makefile, a build.ninja and xargs input.
type Corpus struct {
	// Name says where the corpus came from ("cgen:seed=1,files=496",
	// "debian:libzstd").
	Name string
	// Dir is the absolute directory the commands run in; Write sets it for
	// a generated corpus.
	Dir string
	// Files are written under Dir by Write; empty for a corpus that is
	// already on disk.
	Files []CorpusFile
	// Tasks are the build steps in an order that runs each after its
	// dependencies.
	Tasks []CorpusTask
}

// CorpusFile is a source file of a generated corpus.
type CorpusFile struct {
	Path string // relative to Corpus.Dir
	Data []byte
}

// CorpusTask is one build step.
type CorpusTask struct {
	// ID names the task; unique in the corpus.
	ID string
	// Output is the file the step writes, relative to Corpus.Dir: the
	// Makefile and build.ninja target, and what Clean removes.
	Output string
	// Args is the argv, run directly; when nil, Shell is run by /bin/sh.
	Args []string
	// Shell is the command line for sh -c when Args is nil.
	Shell string
	// Dir is the working directory relative to Corpus.Dir; "" for Dir.
	Dir string
	// Deps are the IDs of the tasks whose outputs this one reads.
	Deps []string
	// Compile is true for a compilation (one translation unit), false for
	// a link or archive step.
	Compile bool
}

// CommandLine returns the task as one line for sh -c, including the cd
// into its directory.
func (t CorpusTask) CommandLine() string {
	line := t.Shell
	if t.Args != nil {
		line = shellJoin(t.Args)
	}
	if t.Dir != "" {
		line = "cd " + shellQuote(t.Dir) + " && " + line
	}
	return line
}

// Write writes the corpus's files under dir (created if needed) and sets
// c.Dir to its absolute path.
func (c *Corpus) Write(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("bench: corpus directory %s: %w", dir, err)
	}
	for _, f := range c.Files {
		p := filepath.Join(abs, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("bench: writing corpus: %w", err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return fmt.Errorf("bench: writing corpus: %w", err)
		}
	}
	for _, t := range c.Tasks {
		p := filepath.Join(abs, filepath.FromSlash(t.Output))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("bench: writing corpus: %w", err)
		}
	}
	c.Dir = abs
	return nil
}

// Clean removes every task's output, so that the next build runs every
// step. Missing outputs are not an error.
func (c *Corpus) Clean() error {
	for _, t := range c.Tasks {
		err := os.Remove(filepath.Join(c.Dir, filepath.FromSlash(t.Output)))
		if err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("bench: cleaning corpus: %w", err)
		}
	}
	return nil
}

// Compiles returns how many tasks are compilations.
func (c *Corpus) Compiles() int {
	n := 0
	for _, t := range c.Tasks {
		if t.Compile {
			n++
		}
	}
	return n
}

// levels returns the tasks grouped by depth: level 0 has no dependencies,
// level k depends on tasks of levels below k only. xargs runs one level
// after another.
func (c *Corpus) levels() ([][]CorpusTask, error) {
	depth := make(map[string]int, len(c.Tasks))
	var out [][]CorpusTask
	for _, t := range c.Tasks {
		d := 0
		for _, dep := range t.Deps {
			dd, ok := depth[dep]
			if !ok {
				return nil, fmt.Errorf("bench: corpus %s: task %q depends on %q, which is not before it", c.Name, t.ID, dep)
			}
			d = max(d, dd+1)
		}
		depth[t.ID] = d
		for len(out) <= d {
			out = append(out, nil)
		}
		out[d] = append(out[d], t)
	}
	return out, nil
}

// shellQuote quotes s for sh when it holds anything but safe characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=./,:@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}
