"""The Kubernetes runtime (ENGINE=k8s): the render's stack as pods, networks and secrets."""
