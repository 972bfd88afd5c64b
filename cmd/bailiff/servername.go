package main

import (
	"net/url"
	"path/filepath"
	"strings"
)

// serverName is --server, else a name the server is known by: the URL's
// host, or the command's base name (for a launcher, its last argument's).
func serverName(p runParams, command []string) string {
	server := p.server
	if server == "" && p.url != "" {
		// PreRunE has parsed it.
		u, _ := url.Parse(p.url)
		server = u.Hostname()
	}
	if server == "" {
		server = commandName(command)
	}
	return server
}

// launchers run a package or a script named among their arguments.
var launchers = map[string]bool{"npx": true, "node": true, "uvx": true, "bunx": true, "pipx": true, "deno": true}

// commandName is the name a server's command line says it is: for a
// launcher, the package (or script) it runs, never a path the server is
// given to work on (server-filesystem /srv/ws is "filesystem", not
// "ws"); else the command's base name. A package's scope, version and
// its "server-"/"mcp-server-" prefix or "-mcp"/"-mcp-server" suffix say
// nothing of which server it is.
func commandName(command []string) string {
	name := filepath.Base(command[0])
	if !usableName(name) {
		return "server"
	}
	if !launchers[name] {
		return name
	}
	for i := 1; i < len(command); i++ {
		a := command[i]
		switch {
		case a == "run" || a == "exec" || a == "--":
			continue
		case a == "-p" || a == "--package" || a == "--from":
			i++ // the option's value is the package, the next word its binary
			continue
		case strings.HasPrefix(a, "-"):
			continue
		}
		// A package that names nothing once its scope, version and
		// prefix are gone ("@scope/", "server-") leaves the launcher's
		// name: an empty one would read as the session's own.
		if n := packageName(a); usableName(n) {
			return n
		}
		return name
	}
	return name
}

// usableName tells whether a name can name a server: it becomes part of
// the default audit log's file name, so it must be one path element.
func usableName(n string) bool {
	return n != "" && n != "." && n != ".." && !strings.ContainsAny(n, `/\`)
}

// packageName reads a package or script argument as a server's name.
func packageName(a string) string {
	if strings.HasPrefix(a, "@") {
		if _, rest, ok := strings.Cut(a, "/"); ok {
			a = rest // @scope/name
		}
	}
	if i := strings.LastIndex(a, "@"); i > 0 {
		a = a[:i] // name@version
	}
	a = filepath.Base(a)
	if ext := filepath.Ext(a); ext == ".js" || ext == ".mjs" || ext == ".ts" || ext == ".py" {
		a = strings.TrimSuffix(a, ext)
	}
	for _, p := range []string{"mcp-server-", "server-", "mcp_server_"} {
		a = strings.TrimPrefix(a, p)
	}
	for _, s := range []string{"-mcp-server", "-mcp"} {
		a = strings.TrimSuffix(a, s)
	}
	return a
}
