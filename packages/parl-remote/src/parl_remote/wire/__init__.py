"""The wire format, below every transport: message types and frames (``protocol``), signing, the byte
stream framing, serialization (pickle protocol 5) and the same-host shared-memory codec (``shm``).
Nothing here opens a socket."""
