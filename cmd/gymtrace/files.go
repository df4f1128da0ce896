package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// captureFiles is a capture named by path as files: the file itself; a
// case folder's capture (its console/ files, else its otlp/ ones: what
// sits beside them, truth and Gym's outcome files, is no capture); else
// every regular file under the folder (hidden ones aside), sorted.
func captureFiles(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	for _, sub := range []string{"console", "otlp"} {
		if fi, err := os.Stat(filepath.Join(path, sub)); err == nil && fi.IsDir() {
			return captureFiles(filepath.Join(path, sub))
		}
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && p != path {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: the folder holds no files", path)
	}
	sort.Strings(files)
	return files, nil
}

// expandCaptures is the capture arguments as files: each folder as
// captureFiles reads it, files and - (stdin) as they are. A path that
// cannot be read stays, for the reader to report once.
func expandCaptures(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		if a == "-" {
			out = append(out, a)
			continue
		}
		if fi, err := os.Stat(a); err != nil || !fi.IsDir() {
			out = append(out, a)
			continue
		}
		files, err := captureFiles(a)
		if err != nil {
			return nil, err
		}
		out = append(out, files...)
	}
	return out, nil
}
