/**
 * What the HTTP server does with sockets before (and between) requests:
 *
 * - Connections are bounded per client address (IPv4 address, IPv6 /64: one
 *   host usually holds a whole /64), so one client cannot hold them all. At
 *   its own bound, a client's new connection takes the place of its own
 *   longest-idle one (the same rule as below): sockets it left open, or a
 *   NAT's other hosts left idle, never lock its next request out.
 * - At the server's cap, a new connection takes the place of the connection
 *   that has been idle longest (one that has not sent a complete request
 *   first, then an idle keep-alive one), instead of being refused: idle
 *   sockets held by others never lock a client out. A connection in the
 *   middle of a request is never closed for a newcomer.
 * - A request Node's parser refuses before it exists (URL and headers over
 *   16 KiB, a header with a line break or control character, a request that
 *   did not arrive in time) is answered in the server's own terms: the
 *   contract's envelope at the API (not Fastify's own JSON), S3's XML error
 *   at the embedded bucket (not Node's bare status line).
 *
 * Both servers use this (server.ts, bucket/embedded.ts). The headers timeout
 * that cuts connections which never send a complete request is Node's own,
 * set there from limits.ts.
 */
import http from 'node:http';
import net, { type Socket } from 'node:net';
import { CODES, type Envelope } from './envelope.js';

export interface ConnectionLimits {
  maxConnections: number;
  maxConnectionsPerAddress: number;
}

/** The client a connection counts against: the IPv4 address, or the /64 of an IPv6 one. */
export function clientKey(address: string | undefined): string {
  if (address === undefined) return 'unknown';
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  if (net.isIPv4(v4)) return v4;
  if (!net.isIPv6(address)) return address;
  const [head = '', tail] = address.split('%')[0]!.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups =
    tail === undefined
      ? left
      : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}

interface Tracked {
  socket: Socket;
  key: string;
  /** Requests received and not yet answered on this connection. */
  busy: number;
  /** Whether it ever sent a complete request (headers). */
  served: boolean;
  gone: boolean;
}

/**
 * Applies the per-address bound and the make-room rule (file comment) to
 * `server`. Replaces server.maxConnections. Call it once the server's own
 * handlers are attached: a server that answers 'checkContinue' or
 * 'checkExpectation' itself (the bucket) gets those requests instead of
 * 'request', and they are in progress all the same.
 */
export function guardConnections(server: http.Server, limits: ConnectionLimits): void {
  // Map order is the order of last activity: the first idle entry is the longest idle.
  const open = new Map<Socket, Tracked>();
  const perClient = new Map<string, number>();

  const forget = (t: Tracked): void => {
    if (t.gone) return;
    t.gone = true;
    open.delete(t.socket);
    const n = (perClient.get(t.key) ?? 1) - 1;
    if (n <= 0) perClient.delete(t.key);
    else perClient.set(t.key, n);
  };
  const close = (t: Tracked): void => {
    forget(t);
    t.socket.destroy();
  };
  /**
   * Closes the longest-idle connection (of client `key` only, when given),
   * never-served ones first; false when every such connection is busy.
   */
  const makeRoom = (key?: string): boolean => {
    let idleServed: Tracked | undefined;
    for (const t of open.values()) {
      if (t.busy > 0 || (key !== undefined && t.key !== key)) continue;
      if (!t.served) {
        close(t);
        return true;
      }
      idleServed ??= t;
    }
    if (idleServed === undefined) return false;
    close(idleServed);
    return true;
  };

  server.on('connection', (socket: Socket) => {
    const key = clientKey(socket.remoteAddress);
    const n = perClient.get(key) ?? 0;
    // At the client's own cap, its own longest-idle connection makes room (it cannot take another's).
    const room =
      n >= limits.maxConnectionsPerAddress ? makeRoom(key) : open.size < limits.maxConnections || makeRoom();
    if (!room) {
      socket.destroy();
      return;
    }
    const t: Tracked = { socket, key, busy: 0, served: false, gone: false };
    open.set(socket, t);
    perClient.set(key, (perClient.get(key) ?? 0) + 1);
    socket.once('close', () => forget(t));
  });

  const onRequest = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const t = open.get(req.socket);
    if (t === undefined) return;
    t.busy++;
    t.served = true;
    res.once('close', () => {
      t.busy--;
      if (t.gone) return;
      // Active just now: to the end of the order.
      open.delete(t.socket);
      open.set(t.socket, t);
    });
  };
  server.on('request', onRequest);
  // Only where the server answers them itself: a listener here would take them from Node's own handling.
  for (const event of ['checkContinue', 'checkExpectation']) {
    if (server.listenerCount(event) > 0) server.on(event, onRequest);
  }
}

/** What a request Node's parser refused is: too large, too late, or not HTTP. */
export type ClientErrorKind = 'too-large' | 'timeout' | 'malformed';

export function clientErrorKind(err: NodeJS.ErrnoException): ClientErrorKind {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return 'too-large';
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return 'timeout';
    default:
      return 'malformed';
  }
}

/** An answer written straight to the socket, for a request that never became one. */
export interface RawAnswer {
  status: number;
  contentType: string;
  body: string;
}

/** The envelope a request gets when Node's parser refused it (see clientErrorAnswer). */
export function clientErrorAnswer(
  err: NodeJS.ErrnoException,
  opts: { maxHeaderBytes: number },
): { status: number; envelope: Envelope } {
  switch (clientErrorKind(err)) {
    case 'too-large':
      return {
        status: 431,
        envelope: {
          code: CODES.HEADERS_TOO_LARGE,
          message: `The request's URL and headers are larger than ${opts.maxHeaderBytes} bytes. Check the address and the x-auth-token header (a token is far shorter).`,
        },
      };
    case 'timeout':
      return {
        status: 408,
        envelope: {
          code: CODES.REQUEST_TIMEOUT,
          message: 'The request did not arrive completely in time. Send it again.',
        },
      };
    case 'malformed':
      return {
        status: 400,
        envelope: {
          code: CODES.BAD_HTTP_REQUEST,
          message:
            'The request is not valid HTTP: a header holds a line break or a control character (was a token read with its newline?), or the request line is malformed.',
        },
      };
  }
}

const answered = new WeakSet<Socket>();
/** How long, and how many bytes, the rest of a refused request is read before the connection is cut. */
const DRAIN_MS = 2_000;
const DRAIN_BYTES = 2 * 1024 * 1024;

/** The API's answer to a request Node's parser refused: the envelope as JSON. */
export function envelopeAnswer(err: NodeJS.ErrnoException, opts: { maxHeaderBytes: number }): RawAnswer {
  const { status, envelope } = clientErrorAnswer(err, opts);
  return { status, contentType: 'application/json', body: JSON.stringify(envelope) };
}

/**
 * The servers' 'clientError' handler (Fastify's clientErrorHandler at the
 * API): `answer`, then the connection is closed. What the client is still
 * sending (the rest of a 1 MB token) is read and dropped for a moment
 * first, bounded in time and bytes: closing a socket with unread data sends
 * a reset, and the client would see "connection reset" instead of the answer.
 */
export function answerClientError(
  err: NodeJS.ErrnoException,
  socket: Socket,
  answer: (err: NodeJS.ErrnoException) => RawAnswer,
): void {
  // Node calls again for each further chunk the parser refuses: one answer only.
  if (answered.has(socket)) return;
  answered.add(socket);
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  // An answer already under way on this connection (a bad request pipelined behind a good
  // one): writing ours into it would corrupt both; Node's own handler gives up the same way.
  const inFlight = (socket as Socket & { _httpMessage?: http.ServerResponse | null })._httpMessage;
  if (!socket.writable || inFlight?.headersSent === true) {
    socket.destroy();
    return;
  }
  const { status, contentType, body } = answer(err);
  socket.end(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? ''}\r\nContent-Type: ${contentType}\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  if (clientErrorKind(err) === 'timeout') {
    // A client that stopped sending: nothing to wait for.
    socket.once('finish', () => socket.destroy());
    return;
  }
  socket.removeAllListeners('data');
  dropRest(socket, socket, { ms: DRAIN_MS, bytes: DRAIN_BYTES });
}

/**
 * Reads and drops what `from` still brings, then closes `socket`: once the
 * client has sent it all, or after `bound` (time, bytes), whichever comes
 * first. Closing a socket with unread data sends a reset, and a client that
 * is still writing its request loses the answer already sent to it.
 */
function dropRest(socket: Socket, from: NodeJS.ReadableStream, bound: { ms: number; bytes: number }): void {
  let drained = 0;
  const timer = setTimeout(() => socket.destroy(), bound.ms);
  timer.unref();
  from.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > bound.bytes) socket.destroy();
  });
  socket.once('close', () => clearTimeout(timer));
  socket.once('end', () => socket.destroy());
  from.resume();
}

/** How long, and how many bytes, of a body over the limit are read after its 413 (see answerTooLarge). */
const TOO_LARGE_DRAIN_MS = 10_000;
const TOO_LARGE_DRAIN_BYTES = 64 * 1024 * 1024;

/**
 * For a request whose body is over the limit, answered before the body was
 * read (413, `Connection: close`): the rest of the body is read and dropped,
 * bounded in time and bytes, before the connection closes, so the client
 * still writing it is not reset (EPIPE) and reads the answer. Node would
 * close the socket as soon as the answer is out.
 */
export function answerTooLarge(req: http.IncomingMessage): void {
  const socket = req.socket;
  // Node's server calls destroySoon once an answer with `Connection: close` is out: end only
  // the sending side then, and close once the body is in (or the bound is reached).
  socket.destroySoon = () => {
    socket.end();
  };
  req.once('end', () => {
    if (socket.writableFinished) socket.destroy();
    else socket.once('finish', () => socket.destroy());
  });
  dropRest(socket, req, { ms: TOO_LARGE_DRAIN_MS, bytes: TOO_LARGE_DRAIN_BYTES });
}
