package clientconfig

import "testing"

// TestCheckRefusesDuplicateKeys: a key given twice anywhere in a client
// config is refused with its line, also where bailiff itself reads only
// one level (env, args) or keeps the value as written (another block):
// bailiff would wrap one value and the client might start the other.
func TestCheckRefusesDuplicateKeys(t *testing.T) {
	for _, c := range []struct{ config, want string }{
		{"{\"mcpServers\": {\"fs\": {\"command\": \"npx\"}},\n \"mcpServers\": {}}", `line 2: key "mcpServers" appears twice`},
		{"{\"mcpServers\": {\"fs\": {\n  \"command\": \"npx\",\n  \"env\": {\"HOME\": \"/a\", \"HOME\": \"/b\"}}}}", `line 3: key "HOME" appears twice`},
		{"{\"mcpServers\": {\"fs\": {\"command\": \"npx\"}},\n \"other\": {\"x\": 1,\n \"x\": 2}}", `line 3: key "x" appears twice`},
		{"{\"mcpServers\": {\"fs\": {\"command\": \"npx\", \"comm\\u0061nd\": \"sh\"}}}", `line 1: key "command" appears twice`},
	} {
		err := Check([]byte(c.config), []string{"fs"})
		if err == nil || err.Error() != c.want {
			t.Errorf("Check(%s): %v, want %q", c.config, err, c.want)
		}
	}
	if err := Check([]byte(`{"mcpServers": {"fs": {"command": "npx", "env": {"HOME": "/a"}}}}`), []string{"fs"}); err != nil {
		t.Fatalf("setup: %v", err)
	}
}
