package launch

import "os"

func linkSelf(path string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	return os.Symlink(exe, path)
}
