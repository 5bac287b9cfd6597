import type { FastifyInstance } from 'fastify';
import type { CredentialsState } from '../bucket/credentials-check.js';
import type { ServiceContext } from '../context.js';
import { DatabaseUnavailableError } from '../data/sql.js';
import { ApiError, CODES, ok, type Envelope } from '../envelope.js';

export const HEALTH_PATH = '/healthz';
export const READY_PATH = '/readyz';

/** A readiness check waits this long for the database, then says "not ready". */
const PING_TIMEOUT_MS = 2_000;

const refusal = (): Envelope => ({
  code: CODES.SHUTTING_DOWN,
  message:
    'This service instance is shutting down. Try again: another instance, or this one once restarted, answers.',
});

/**
 * For a load balancer (no token needed): GET /healthz answers 200 while the
 * process runs; GET /readyz answers 200 when the database answers, an
 * external bucket's STS gives credentials (bucket/credentials-check.ts:
 * 503005 otherwise) and the instance is not draining, else 503 with the
 * envelope. While draining
 * (SIGTERM), every new request is refused with 503002 and `Connection:
 * close`, and the requests in flight are counted so that drain() can wait
 * for them.
 */
export function registerHealthRoutes(app: FastifyInstance, ctx: ServiceContext): void {
  const { lifecycle } = ctx;
  app.addHook('onRequest', async (req, reply) => {
    if (lifecycle.draining && req.url !== HEALTH_PATH) {
      return reply.code(503).header('connection', 'close').send(refusal());
    }
    lifecycle.inFlight++;
    let done = false;
    const end = () => {
      if (!done) lifecycle.inFlight--;
      done = true;
    };
    reply.raw.once('finish', end);
    reply.raw.once('close', end);
  });

  app.get(HEALTH_PATH, () => Promise.resolve(ok({ status: 'alive' })));

  app.get(READY_PATH, async (_req, reply) => {
    if (lifecycle.draining) return reply.code(503).header('connection', 'close').send(refusal());
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        ctx.db.ping(),
        new Promise<never>((_resolve, reject) => {
          timer = setTimeout(() => reject(new DatabaseUnavailableError()), PING_TIMEOUT_MS);
        }),
      ]);
    } catch (err) {
      if (err instanceof ApiError) throw err;
      throw new DatabaseUnavailableError(err);
    } finally {
      clearTimeout(timer);
    }
    // An STS that does not answer: the last known state, not a hanging check.
    let wait: NodeJS.Timeout | undefined;
    const credentials = await Promise.race([
      ctx.credentials.current(),
      new Promise<CredentialsState>((resolve) => {
        wait = setTimeout(() => resolve(ctx.credentials.last()), PING_TIMEOUT_MS);
      }),
    ]).finally(() => clearTimeout(wait));
    if (!credentials.ok) {
      throw new ApiError(
        503,
        CODES.BUCKET_CREDENTIALS_UNAVAILABLE,
        "This instance cannot get bucket credentials from the storage provider's STS; the operator finds the reason in its log.",
      );
    }
    return ok({ status: 'ready' });
  });
}
