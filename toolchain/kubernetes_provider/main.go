// Our own entry point for the kubernetes resource provider: the upstream main
// embeds schema files that its build generates, so we embed the module's
// schema.json and stamp the provider version into it at start-up instead.
package main

import (
	_ "embed"
	"encoding/json"
	"log"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema.json
var schemaJSON []byte

//go:embed terraform-mapping.json
var terraformMapping []byte

func main() {
	var spec map[string]any
	if err := json.Unmarshal(schemaJSON, &spec); err != nil {
		log.Fatalf("kubernetes schema: %v", err)
	}
	spec["version"] = version.Version
	versioned, err := json.Marshal(spec)
	if err != nil {
		log.Fatalf("kubernetes schema: %v", err)
	}
	provider.Serve("kubernetes", version.Version, versioned, terraformMapping)
}
