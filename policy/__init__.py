"""The policy pack (`pulumi preview --policy-pack policy`): rules.py holds the rules, __main__.py wires them."""
