package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

const (
	maxFileLines = 400
	maxFuncLines = 80
	// longMark, followed by a reason, is how a file (in a comment before
	// its package clause) or a function (in its doc comment) says why it
	// is longer than the limit.
	longMark = "long:"
)

// overLimit is what was over the limits when the rule came in and is not
// split yet: nothing now. It stays so that the rule can only ever tighten:
// something new over a limit fails, and so would an entry no longer over.
var overLimit = map[string]bool{}

// TestSizes: no source file over maxFileLines and no function over
// maxFuncLines, unless it says why. Tests and generated test data are
// left out: a table of cases is long for a reason everyone can see.
func TestSizes(t *testing.T) {
	over := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root(t), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root(t), path)
		rel = filepath.ToSlash(rel)
		if n := fset.File(f.Pos()).LineCount(); n > maxFileLines && !fileSaysWhy(f) {
			over[rel] = true
			if !overLimit[rel] {
				t.Errorf("%s has %d lines (limit %d) and no %q comment before its package clause saying why", rel, n, maxFileLines, "// "+longMark+" reason")
			}
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			if n > maxFuncLines && !saysWhy(fd.Doc) {
				key := rel + ":" + funcName(fd)
				over[key] = true
				if !overLimit[key] {
					t.Errorf("%s: %s has %d lines (limit %d) and no %q line in its doc comment saying why", rel, funcName(fd), n, maxFuncLines, "// "+longMark+" reason")
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for k := range overLimit {
		if !over[k] {
			t.Errorf("%s is within the limits now: take it off overLimit", k)
		}
	}
}

// funcName is a function's name, with its receiver's type for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

func fileSaysWhy(f *ast.File) bool {
	for _, c := range f.Comments {
		if c.Pos() < f.Package && saysWhy(c) {
			return true
		}
	}
	return false
}

// saysWhy reports whether a comment holds the mark with a reason after
// it: a bare mark explains nothing.
func saysWhy(c *ast.CommentGroup) bool {
	if c == nil {
		return false
	}
	for _, l := range c.List {
		text := strings.TrimSpace(strings.TrimPrefix(l.Text, "//"))
		if reason, ok := strings.CutPrefix(text, longMark); ok && len(strings.Fields(reason)) >= 3 {
			return true
		}
	}
	return false
}
