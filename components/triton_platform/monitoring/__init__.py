"""Monitoring: Prometheus scraping, recording and alert rules, Alertmanager routing and Grafana dashboards (its Args,
rules, alerts, routing, dashboards and storage)."""
