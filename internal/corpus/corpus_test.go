package corpus

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNamesAndExtract(t *testing.T) {
	Dir(t) // skips without the shared folder
	names := Names()
	if len(names) < 21 {
		t.Fatalf("Names() = %d machines, want the 21 of the corpus README", len(names))
	}
	for _, name := range []string{"2arm-2c", "5intel64-hybrid-lakefield", "20s390-2g6s4c"} {
		root := Extract(t, name)
		if _, err := os.Stat(filepath.Join(root, "sys", "devices", "system", "cpu")); err != nil {
			t.Errorf("Extract(%s) = %s without sys/devices/system/cpu: %v", name, root, err)
		}
		if again := Extract(t, name); again != root {
			t.Errorf("second Extract(%s) = %s, first %s", name, again, root)
		}
		exp := Load(t, name)
		if exp.Name != name || exp.PUs == 0 || len(exp.PUIndexes) != exp.PUs {
			t.Errorf("Load(%s) = name %q, %d PUs, %d PU indexes", name, exp.Name, exp.PUs, len(exp.PUIndexes))
		}
	}
	if v, ok := Load(t, "nvidiagpunumanodes").Variant("gpu_numa_nodes_kept"); !ok || len(v.NUMANodes) != 8 {
		t.Errorf("gpu_numa_nodes_kept variant = %+v, %v", v, ok)
	}
}

// TestExtractRejectsEscapes checks that an archive entry aiming outside the
// extraction directory is refused. The standard library has no bzip2
// writer, so the tar goes to extractTar directly.
func TestExtractRejectsEscapes(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "../evil", Typeflag: tar.TypeReg, Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	tw.Close()
	dst := t.TempDir()
	err := extractTar(tar.NewReader(&buf), dst)
	if err == nil || !strings.Contains(err.Error(), "escapes") {
		t.Fatalf("extractTar(../evil) = %v, want an escape error", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dst), "evil")); err == nil {
		t.Fatal("extractTar wrote outside its directory")
	}
}
