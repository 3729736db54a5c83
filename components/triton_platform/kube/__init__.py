"""Kubernetes objects as the components create them: the object helper and provider, namespaces, Helm charts, images,
pod spreading and security, priority classes, policy exceptions and workload identity."""
