package write

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/filetool"
	"github.com/ruleagent/ruleagent/tools/textfile"
)

// existing reports the file at the resolved path rel, or nil if there is
// none.
func (t *Tool) existing(rel string) (fs.FileInfo, error) {
	root, err := t.ws.Root()
	if err != nil {
		return nil, err
	}
	fi, err := root.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, tools.Wrap(tools.ErrExecutionFailed, err, "checking %s", rel)
	case fi.IsDir():
		return nil, tools.Errorf(tools.ErrInvalidArgs, "%s is a directory; give a file name", rel)
	}
	return fi, nil
}

func (t *Tool) checkSize(rel string, n int64) error {
	if n > t.cfg.MaxFileSize {
		return tools.Errorf(tools.ErrInvalidArgs, "%s would be %s, over the %s limit for one file", rel, filetool.Size(n), filetool.Size(t.cfg.MaxFileSize))
	}
	return nil
}

func (t *Tool) create(rel, content string) (string, error) {
	fi, err := t.existing(rel)
	if err != nil {
		return "", err
	}
	if fi != nil {
		return "", tools.Errorf(tools.ErrInvalidArgs,
			"%s already exists (%s); use mode overwrite to replace it, mode append to add to it, or the edit tool to change part of it",
			rel, filetool.Size(fi.Size()))
	}
	if err := t.checkSize(rel, int64(len(content))); err != nil {
		return "", err
	}
	if _, err := t.ws.WriteFileAtomic(rel, []byte(content), newFilePerm); err != nil {
		return "", err
	}
	return fmt.Sprintf("created %s (%s)", rel, filetool.Size(int64(len(content)))), nil
}

func (t *Tool) overwrite(rel, content string) (string, error) {
	fi, err := t.existing(rel)
	if err != nil {
		return "", err
	}
	if err := t.checkSize(rel, int64(len(content))); err != nil {
		return "", err
	}
	if _, err := t.ws.WriteFileAtomic(rel, []byte(content), newFilePerm); err != nil {
		return "", err
	}
	if fi == nil {
		return fmt.Sprintf("created %s (%s)", rel, filetool.Size(int64(len(content)))), nil
	}
	return fmt.Sprintf("overwrote %s (%s; it was %s)", rel, filetool.Size(int64(len(content))), filetool.Size(fi.Size())), nil
}

// append rewrites the file with content added at the end, through
// WriteFileAtomic like every other write: a reader sees the old file or the
// new one, never a partial append.
func (t *Tool) append(rel, content string) (string, error) {
	if content == "" {
		return "", tools.Errorf(tools.ErrInvalidArgs, "content is empty; there is nothing to append")
	}
	fi, err := t.existing(rel)
	if err != nil {
		return "", err
	}
	var old []byte
	if fi != nil {
		if _, _, err := filetool.StatFile(t.ws, rel); err != nil {
			return "", err
		}
		if err := t.checkSize(rel, fi.Size()+int64(len(content))); err != nil {
			return "", err
		}
		if _, old, err = t.ws.ReadFile(rel, t.cfg.MaxFileSize); err != nil {
			return "", err
		}
	}
	data := make([]byte, 0, len(old)+len(content)+64)
	data = append(data, old...)
	if t.cfg.AppendSeparator {
		eol := textfile.DetectEOL(string(old))
		if len(old) > 0 && old[len(old)-1] != '\n' {
			data = append(data, eol...)
		}
		data = append(data, "--- appended "+t.now().UTC().Format(time.RFC3339)+" ---"+eol...)
	}
	data = append(data, content...)
	if err := t.checkSize(rel, int64(len(data))); err != nil {
		return "", err
	}
	if _, err := t.ws.WriteFileAtomic(rel, data, newFilePerm); err != nil {
		return "", err
	}
	added := int64(len(data) - len(old))
	msg := fmt.Sprintf("appended %s to %s (now %s)", filetool.Size(int64(len(content))), rel, filetool.Size(int64(len(data))))
	if fi == nil {
		msg = fmt.Sprintf("created %s with the appended content (%s)", rel, filetool.Size(int64(len(data))))
	}
	if t.cfg.AppendSeparator {
		msg += fmt.Sprintf(", after a timestamp separator line (%s added in all)", filetool.Size(added))
	}
	return msg, nil
}
