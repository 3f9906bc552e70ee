package farm

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// DefaultPort is distccd's TCP port.
const DefaultPort = 3632

// DefaultSlots is the job limit of a host written without /LIMIT: four,
// as distcc(1) says ("The limit defaults to four per host").
const DefaultSlots = 4

// Host is one TCP host of a DISTCC_HOSTS list:
// HOSTID[:PORT][/LIMIT][,OPTIONS], HOSTID a name, an IPv4 address or an
// IPv6 address in brackets.
type Host struct {
	// Name is the host name or address as written, without brackets.
	Name string
	// Port is the TCP port; DefaultPort when none was written.
	Port int
	// Slots is the most jobs sent to the host at once (/LIMIT).
	Slots int
	// Options are the ",OPTION" suffixes (lzo, cpp, auth...), passed on
	// to distcc unchanged.
	Options []string
}

// Addr returns "name:port" for net.Dial (IPv6 in brackets).
func (h Host) Addr() string { return net.JoinHostPort(h.Name, strconv.Itoa(h.Port)) }

// String returns the host in DISTCC_HOSTS syntax, with its limit:
// "name:port/N[,opts]".
func (h Host) String() string { return h.spec(h.Slots) }

// spec writes the host with the given limit.
func (h Host) spec(limit int) string {
	var b strings.Builder
	b.WriteString(h.Addr())
	b.WriteString("/")
	b.WriteString(strconv.Itoa(limit))
	for _, o := range h.Options {
		b.WriteString(",")
		b.WriteString(o)
	}
	return b.String()
}

// DistccHosts returns the DISTCC_HOSTS value that sends one job to h and
// nowhere else: h with a limit of one.
func (h Host) DistccHosts() string { return h.spec(1) }

// DistccHostsPreprocessing is DistccHosts for a distcc that preprocesses
// here (plain mode, as a launcher runs it): it also bounds the
// preprocessors that all such distcc clients of this user run at once to
// cpp (distcc's --localslots_cpp, whose lock files they share; distcc's
// own default is 8), so that remote compiles do not crowd a machine with
// fewer CPUs than that.
func (h Host) DistccHostsPreprocessing(cpp int) string {
	return "--localslots_cpp=" + strconv.Itoa(max(cpp, 1)) + " " + h.spec(1)
}

// ParseError is a bad host list: where it came from and what is wrong.
type ParseError struct {
	// Source names the list: a file name, "$DISTCC_HOSTS" or "--farm".
	Source string
	// Line is the line of a file (from 1), or 0.
	Line int
	// Text is the offending host entry.
	Text string
	Err  error
}

// Error returns "source:line: host "text": reason".
func (e *ParseError) Error() string {
	where := e.Source
	if e.Line > 0 {
		where += ":" + strconv.Itoa(e.Line)
	}
	return fmt.Sprintf("farm: %s: host %q: %v", where, e.Text, e.Err)
}

// Unwrap returns the reason.
func (e *ParseError) Unwrap() error { return e.Err }

// Reasons a host entry is refused, wrapped in a *ParseError.
var (
	ErrSyntax      = errors.New("bad host syntax")
	ErrUnsupported = errors.New("not supported")
)

// ParseHosts parses a host list in DISTCC_HOSTS syntax: entries separated
// by blanks or newlines, '#' starting a comment to the end of the line (as
// in a hosts file). source names the list in errors.
//
// "localhost" entries and the global options --randomize, --localslots=N
// and --localslots_cpp=N are accepted and ignored: the local machine is
// numasteal's own, and its order is numasteal's choice. SSH hosts (@host)
// and +zeroconf are refused with ErrUnsupported. A host may appear only
// once (same name and port).
func ParseHosts(source, text string) ([]Host, error) {
	var hosts []Host
	seen := map[string]bool{}
	for i, line := range strings.Split(text, "\n") {
		if c := strings.IndexByte(line, '#'); c >= 0 {
			line = line[:c]
		}
		for _, f := range strings.Fields(line) {
			h, ok, err := parseHost(f)
			if err != nil {
				return nil, &ParseError{Source: source, Line: lineOf(text, i), Text: f, Err: err}
			}
			if !ok {
				continue
			}
			if seen[h.Addr()] {
				return nil, &ParseError{Source: source, Line: lineOf(text, i), Text: f, Err: fmt.Errorf("%w: %s listed twice", ErrSyntax, h.Addr())}
			}
			seen[h.Addr()] = true
			hosts = append(hosts, h)
		}
	}
	return hosts, nil
}

// lineOf returns the 1-based line number for a multi-line text, 0 for a
// one-line list (a flag or variable).
func lineOf(text string, i int) int {
	if !strings.Contains(text, "\n") {
		return 0
	}
	return i + 1
}

// parseHost parses one entry; ok is false for entries that name no remote
// host (localhost, global options).
func parseHost(f string) (h Host, ok bool, err error) {
	switch {
	case f == "--randomize", strings.HasPrefix(f, "--localslots=") || strings.HasPrefix(f, "--localslots_cpp="):
		return Host{}, false, nil
	case f == "+zeroconf":
		return Host{}, false, fmt.Errorf("%w: zeroconf discovery", ErrUnsupported)
	case strings.Contains(f, "@"):
		return Host{}, false, fmt.Errorf("%w: SSH hosts (numasteal probes hosts over TCP)", ErrUnsupported)
	}
	rest := f
	if c := strings.IndexByte(rest, ','); c >= 0 {
		for _, o := range strings.Split(rest[c+1:], ",") {
			switch o {
			case "":
				return Host{}, false, fmt.Errorf("%w: empty option", ErrSyntax)
			case "cpp":
				// Pump mode sends sources and headers for the host to
				// preprocess, through distcc's include server; numasteal
				// preprocesses here and sends the .i file.
				return Host{}, false, fmt.Errorf("%w: the cpp (pump) option: numasteal preprocesses locally; drop \",cpp\"", ErrUnsupported)
			}
			h.Options = append(h.Options, o)
		}
		rest = rest[:c]
	}
	// HOSTID: a bracketed IPv6 address or everything up to ':' or '/'.
	if strings.HasPrefix(rest, "[") {
		e := strings.IndexByte(rest, ']')
		if e < 0 {
			return Host{}, false, fmt.Errorf("%w: unclosed '['", ErrSyntax)
		}
		h.Name, rest = rest[1:e], rest[e+1:]
		if net.ParseIP(h.Name) == nil {
			return Host{}, false, fmt.Errorf("%w: %q is not an IPv6 address", ErrSyntax, h.Name)
		}
	} else {
		e := strings.IndexAny(rest, ":/")
		if e < 0 {
			e = len(rest)
		}
		h.Name, rest = rest[:e], rest[e:]
	}
	if h.Name == "" {
		return Host{}, false, fmt.Errorf("%w: no host name", ErrSyntax)
	}
	// TCP_HOST is HOSTID[:PORT][/LIMIT]; the old style HOSTID[/LIMIT][:PORT]
	// is accepted too.
	h.Port, h.Slots = DefaultPort, DefaultSlots
	var gotPort, gotLimit bool
	for rest != "" {
		sep := rest[0]
		e := strings.IndexAny(rest[1:], ":/")
		if e < 0 {
			e = len(rest) - 1
		}
		num := rest[1 : 1+e]
		rest = rest[1+e:]
		n, err := strconv.Atoi(num)
		switch {
		case sep == ':' && !gotPort:
			if err != nil || n < 1 || n > 65535 {
				return Host{}, false, fmt.Errorf("%w: port %q (want 1-65535)", ErrSyntax, num)
			}
			h.Port, gotPort = n, true
		case sep == '/' && !gotLimit:
			if err != nil || n < 1 {
				return Host{}, false, fmt.Errorf("%w: limit %q (want a positive number)", ErrSyntax, num)
			}
			h.Slots, gotLimit = n, true
		default:
			return Host{}, false, fmt.Errorf("%w: repeated %q", ErrSyntax, string(sep))
		}
	}
	if h.Name == "localhost" {
		return Host{}, false, nil
	}
	return h, true, nil
}

// EnvHosts is the environment variable distcc reads its host list from.
const EnvHosts = "DISTCC_HOSTS"

// ParseHostsLax parses a host list as ParseHosts does, but skips bad and
// repeated entries instead of failing, returning each as a *ParseError in
// skipped: what distcc does with $DISTCC_HOSTS (it warns and goes on).
func ParseHostsLax(source, text string) (hosts []Host, skipped []error) {
	seen := map[string]bool{}
	for i, line := range strings.Split(text, "\n") {
		if c := strings.IndexByte(line, '#'); c >= 0 {
			line = line[:c]
		}
		for _, f := range strings.Fields(line) {
			h, ok, err := parseHost(f)
			if err == nil && ok && seen[h.Addr()] {
				err = fmt.Errorf("%w: %s listed twice", ErrSyntax, h.Addr())
			}
			if err != nil {
				skipped = append(skipped, &ParseError{Source: source, Line: lineOf(text, i), Text: f, Err: err})
				continue
			}
			if ok {
				seen[h.Addr()] = true
				hosts = append(hosts, h)
			}
		}
	}
	return hosts, skipped
}

// LoadHosts resolves a --farm value: "env" (or "") reads $DISTCC_HOSTS
// through getenv; a value naming an existing regular file is read as a
// hosts file; anything else is the list itself. An empty list is an
// error: a farm of no hosts is a mistake worth reporting.
//
// A list written on the command line or in a file must be right: a bad
// entry is an error. $DISTCC_HOSTS is read as distcc reads it: a bad entry
// is passed to warn (when not nil) and skipped, and the other hosts are
// used.
func LoadHosts(spec string, getenv func(string) string, warn func(error)) ([]Host, error) {
	source, text := "--farm", spec
	if spec == "" || spec == "env" {
		source, text = "$"+EnvHosts, getenv(EnvHosts)
	} else if st, err := os.Stat(spec); err == nil && st.Mode().IsRegular() {
		data, err := os.ReadFile(spec)
		if err != nil {
			return nil, fmt.Errorf("farm: %w", err)
		}
		source, text = spec, string(data)
	}
	var hosts []Host
	if source == "$"+EnvHosts {
		var skipped []error
		hosts, skipped = ParseHostsLax(source, text)
		for _, err := range skipped {
			if warn != nil {
				warn(err)
			}
		}
	} else {
		var err error
		if hosts, err = ParseHosts(source, text); err != nil {
			return nil, err
		}
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("farm: %s: no remote hosts in %q", source, strings.TrimSpace(text))
	}
	return hosts, nil
}
