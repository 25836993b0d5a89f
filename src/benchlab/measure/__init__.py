"""Where numbers come from: the kernel's accounting of a finished process, and the host's fingerprint."""
