// Command parallelbuild is a small build tool on the numasteal Go API: it
// generates a C project (a few dozen modules with their headers and a
// main), compiles each module with gcc as a process task placed on a CPU at
// fork time, and links the program once every object is built — a build
// graph run by buildrun on the runtime.
//
// Usage:
//
//	parallelbuild [-n 32] [-j N] [-dir DIR]
//
// It prints the path of the built program and the run's summary; run the
// program and it prints the sum it was built to compute.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/numasteal/numasteal/buildgraph"
	"github.com/numasteal/numasteal/buildrun"
	"github.com/numasteal/numasteal/runtime"
)

func main() {
	n := flag.Int("n", 32, "number of C modules to generate")
	jobs := flag.Int("j", 0, "running slots (0: one per worker)")
	dir := flag.String("dir", "", "where to generate and build (default: a new temporary directory)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := mainErr(ctx, *n, *jobs, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "parallelbuild:", err)
		os.Exit(1)
	}
}

func mainErr(ctx context.Context, n, jobs int, dir string) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "parallelbuild-*")
		if err != nil {
			return err
		}
		dir = d
	}
	rt, err := runtime.New(runtime.Config{})
	if err != nil {
		return err
	}
	defer rt.Close()
	bin, rep, err := Build(ctx, rt, dir, n, jobs)
	if err != nil {
		return err
	}
	defer rep.Close()
	fmt.Printf("built %s: %d tasks in %.2fs (user %.2fs, sys %.2fs, %.0f%% CPU)\n",
		bin, len(rep.Tasks), rep.Elapsed.Seconds(), rep.User.Seconds(), rep.Sys.Seconds(), rep.CPUPercent())
	return nil
}

// Build generates a project of n modules in dir, compiles and links it on
// rt with jobs slots (0: one per worker), and returns the program's path.
// A failed compile or link is an error carrying the compiler's message.
func Build(ctx context.Context, rt *runtime.Runtime, dir string, n, jobs int) (string, *buildrun.Report, error) {
	if err := Generate(dir, n); err != nil {
		return "", nil, err
	}
	g := Graph(dir, n)
	if err := g.CheckPrograms(os.Getenv("PATH")); err != nil {
		return "", nil, err
	}
	rep, err := buildrun.Run(ctx, rt, g, buildrun.Options{Slots: jobs})
	if err != nil {
		return "", nil, err
	}
	if !rep.OK() {
		defer rep.Close()
		for _, f := range rep.Failed() {
			msg, _ := f.Proc.Stderr.Tail(4096)
			return "", nil, fmt.Errorf("%s: %v\n%s", f.Task.ID, f.Proc.Err, msg)
		}
		return "", nil, fmt.Errorf("build did not finish: %v", rep.Counts)
	}
	return filepath.Join(dir, "prog"), rep, nil
}

// Graph is the build graph of a generated project: one compile per module
// and for main.c, then a link in a pool of depth 1 that waits for all.
func Graph(dir string, n int) *buildgraph.Graph {
	g := &buildgraph.Graph{Pools: map[string]int{"link": 1}}
	link := &buildgraph.Task{ID: "prog", Cmd: []string{"gcc", "-o", "prog"}, Pool: "link", Cwd: dir}
	for i := 0; i <= n; i++ {
		src, obj := fmt.Sprintf("mod%02d.c", i), fmt.Sprintf("mod%02d.o", i)
		if i == n {
			src, obj = "main.c", "main.o"
		}
		g.Tasks = append(g.Tasks, &buildgraph.Task{
			ID: obj, Cmd: []string{"gcc", "-O1", "-Wall", "-Werror", "-Iinclude", "-c", src, "-o", obj}, Cwd: dir,
		})
		link.Deps = append(link.Deps, obj)
		link.Cmd = append(link.Cmd, obj)
	}
	g.Tasks = append(g.Tasks, link)
	return g
}

// Want is what the program built from n modules prints.
func Want(n int) string {
	sum := 0
	for i := range n {
		sum += i*i + 1
	}
	return fmt.Sprintf("modules=%d sum=%d\n", n, sum)
}

// Generate writes the project of n modules into dir: include/modNN.h and
// modNN.c for each module (modNN(x) returns x*x plus module N-1's answer
// for 1, so every module calls the one before), and main.c, which sums
// modNN(NN) over all modules.
func Generate(dir string, n int) error {
	if err := os.MkdirAll(filepath.Join(dir, "include"), 0o755); err != nil {
		return err
	}
	write := func(name, text string) error { return os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644) }
	if err := write("include/common.h", "#ifndef COMMON_H\n#define COMMON_H\nstatic inline int square(int x) { return x * x; }\n#endif\n"); err != nil {
		return err
	}
	mainC := "#include <stdio.h>\n"
	body := ""
	for i := range n {
		h := fmt.Sprintf("#ifndef MOD%02d_H\n#define MOD%02d_H\nint mod%02d(int x);\n#endif\n", i, i, i)
		c := fmt.Sprintf("#include \"common.h\"\n#include \"mod%02d.h\"\n", i)
		if i > 0 {
			c += fmt.Sprintf("#include \"mod%02d.h\"\nint mod%02d(int x) { return square(x) + (mod%02d(0) >= 0); }\n", i-1, i, i-1)
		} else {
			c += "int mod00(int x) { return square(x) + 1; }\n"
		}
		if err := write(fmt.Sprintf("include/mod%02d.h", i), h); err != nil {
			return err
		}
		if err := write(fmt.Sprintf("mod%02d.c", i), c); err != nil {
			return err
		}
		mainC += fmt.Sprintf("#include \"mod%02d.h\"\n", i)
		body += fmt.Sprintf("\tsum += mod%02d(%d);\n", i, i)
	}
	mainC += fmt.Sprintf("int main(void) {\n\tlong sum = 0;\n%s\tprintf(\"modules=%%d sum=%%ld\\n\", %d, sum);\n\treturn 0;\n}\n", body, n)
	return write("main.c", mainC)
}
