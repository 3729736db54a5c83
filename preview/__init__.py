"""The pull-request preview's library (`scripts/preview-diff`, whose command line is stackctl/preview_command.py):
both revisions exported with the Pulumi CLI's environment (workspace), each stack previewed with the policy pack
(diff), its engine event log read (events), the settings a change moves (settings), and one Markdown comment body
per stack (comment). It imports none of the command line."""
