// Command exports counts the exported names of each package under a
// directory: top-level types, functions, variables and constants, and
// the methods and fields of exported types. A package's exported names
// are what a newcomer must read; a refactor that merges shapes should
// make the count fall.
//
//	go run ./bench/exports [dir]
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	counts := map[string][2]int{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "bench") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		top, all := exported(f)
		c := counts[filepath.ToSlash(rel)]
		counts[filepath.ToSlash(rel)] = [2]int{c[0] + top, c[1] + all}
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "exports:", err)
		os.Exit(1)
	}
	pkgs := make([]string, 0, len(counts))
	for p := range counts {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	fmt.Printf("%-24s %9s %9s\n", "package", "top-level", "all")
	for _, p := range pkgs {
		fmt.Printf("%-24s %9d %9d\n", p, counts[p][0], counts[p][1])
	}
}

// exported counts a file's exported names: top-level ones, and all
// (with exported types' methods and fields).
func exported(f *ast.File) (top, n int) {
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() && d.Recv == nil {
				top++
			}
			if d.Name.IsExported() && (d.Recv == nil || receiverExported(d.Recv)) {
				n++
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						top++
						n += 1 + fields(s.Type)
					}
				case *ast.ValueSpec:
					for _, id := range s.Names {
						if id.IsExported() {
							top++
							n++
						}
					}
				}
			}
		}
	}
	return top, n
}

func receiverExported(recv *ast.FieldList) bool {
	t := recv.List[0].Type
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	if idx, ok := t.(*ast.IndexExpr); ok {
		t = idx.X
	}
	id, ok := t.(*ast.Ident)
	return ok && id.IsExported()
}

// fields counts the exported fields of a struct and methods of an
// interface.
func fields(t ast.Expr) int {
	var list *ast.FieldList
	switch t := t.(type) {
	case *ast.StructType:
		list = t.Fields
	case *ast.InterfaceType:
		list = t.Methods
	default:
		return 0
	}
	n := 0
	for _, f := range list.List {
		for _, id := range f.Names {
			if id.IsExported() {
				n++
			}
		}
		if len(f.Names) == 0 { // embedded
			n++
		}
	}
	return n
}
