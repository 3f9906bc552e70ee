package buildexec

import "strings"

// isMake reports whether the command named name is GNU make.
func isMake(name string) bool {
	return name == "make" || name == "gmake"
}

// DropJobs returns make's arguments args (args[0] the program) without
// its job options: a standalone -j, -jN, --jobs, --jobs=N, and the N of
// "-j N" or "--jobs N". Arguments after "--" and options in a cluster
// ("-kj4") are kept.
func DropJobs(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if i == 0 {
			out = append(out, a)
			continue
		}
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		switch {
		case a == "-j" || a == "--jobs":
			if i+1 < len(args) && isNumber(args[i+1]) {
				i++
			}
			continue
		case strings.HasPrefix(a, "-j") && isNumber(a[2:]),
			strings.HasPrefix(a, "--jobs=") && isNumber(a[len("--jobs="):]):
			continue
		}
		out = append(out, a)
	}
	return out
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
