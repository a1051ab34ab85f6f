"""The job's Unix stream peers (a mixin of ``job.Job``): accepting same-user peers, reading and running their
messages in order, and noticing when the client's stream ends (``job.py`` has the loop that calls these)."""

from __future__ import annotations

import logging
import select
import sys

from parl_remote.server.exits import EXIT_CLIENT_GONE
from parl_remote.transport import unix
from parl_remote.transport.base import WRITABLE, ConnectionLost
from parl_remote.transport.stream_io import StreamConnection
from parl_remote.transport.unix import UnixPeer
from parl_remote.wire import protocol

logger = logging.getLogger(__name__)


class StreamServing:
    """Serves the stream peers of a ``job.Job`` (uses its ``listener``, ``poller``, ``streams``,
    ``stream_masks``, ``_dispatch`` and reply state)."""

    def _accept(self) -> None:
        """Accepts same-user peers on the Unix stream socket."""
        while True:
            try:
                sock, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                logger.warning("job %s: accept failed: %s", self.job_id, exc)
                return
            refused = unix.check_peer(sock)
            if refused is not None:
                logger.warning("job %s: refused a unix stream peer: %s", self.job_id, refused)
                sock.close()
                continue
            peer = UnixPeer(StreamConnection(sock), self.signer, self.shm_channel)
            self.streams[peer.poll_key] = peer
            self.stream_masks[peer.poll_key] = select.POLLIN
            self.poller.register(peer.poll_key, select.POLLIN)
            self.alone_since = None

    def _serve_stream(self, peer: UnixPeer, mask: int) -> None:
        """Reads a stream peer's messages and runs them in order."""
        alive = True
        try:
            if mask & select.POLLOUT:
                peer.flush()
        except ConnectionLost:
            alive = False
        while alive and self.running and not peer.closed:
            try:
                msg = peer.recv(0)
            except ConnectionLost as exc:
                if exc.cause is not None:
                    logger.warning("job %s: closed a unix stream peer: %s", self.job_id, exc)
                alive = False
                break
            except protocol.Notice:
                continue
            except protocol.Unreadable as exc:
                self.client_stream = self.reply_route = peer
                self.sender = None
                self._answer_unreadable(exc)
                continue
            except protocol.Rejected as exc:
                logger.warning("job %s: dropped a message from a unix stream peer and closed it: %s", self.job_id, exc)
                if exc.notice is not None:
                    peer.send_notice(exc.notice)
                alive = False
                break
            if msg is None:
                break
            self.client_stream = self.reply_route = peer
            self.sender = None
            self._dispatch(msg)
        if not alive or peer.closed:
            self._drop_stream(peer)
            return
        if self.pending_output:
            self._flush_output()
        want = select.POLLIN | select.POLLOUT if peer.wanted_events() & WRITABLE else select.POLLIN
        if want != self.stream_masks.get(peer.poll_key):  # wait for room to send queued output
            self.stream_masks[peer.poll_key] = want
            self.poller.modify(peer.poll_key, want)

    def _drop_stream(self, conn: UnixPeer) -> None:
        """Forgets a closed stream peer; when it was the client's connection, the client is gone."""
        self.stream_masks.pop(conn.poll_key, None)
        if self.streams.pop(conn.poll_key, None) is not None:
            try:
                self.poller.unregister(conn.poll_key)
            except KeyError:
                pass
        conn.close()
        if conn is not self.client_stream:
            return
        self.client_stream = None
        if not self.running:
            return
        self._on_monitor()
        if self.peers == 0:
            # a stream cannot reconnect: its end means the client process is gone (or it dropped the actor)
            print(f"[xparl] the client of actor {self.actor_id} disconnected; the actor ends", file=sys.stderr)
            self.running = False
            self.exit_code = EXIT_CLIENT_GONE
