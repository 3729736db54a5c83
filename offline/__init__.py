"""What the offline tools (stackctl, the simulator's and planner's reports, model publishing, the manifest scan)
share: a stack's objects synthesized under Pulumi's mocks, the charts it installs templated with Helm, and output
folders that are refused unless they hold only a tool's own earlier output. It imports none of the tools."""
