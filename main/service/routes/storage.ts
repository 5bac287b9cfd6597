import type { FastifyInstance } from 'fastify';
import { hashToken, requestToken, workspaceGuard } from '../auth.js';
import type { ServiceContext } from '../context.js';
import { StorageProviderError } from '../bucket/types.js';
import { CODES, ok } from '../envelope.js';
import { workspacePrefix } from '../media-store.js';
import { RateLimit, ThrottledError } from '../client-limits.js';

export function registerStorageRoutes(app: FastifyInstance, ctx: ServiceContext): void {
  // Each issue is a row (embedded) or a call to the provider's STS (external):
  // limited per token, as a client needs a few per hour.
  const perToken = new RateLimit(ctx.db, {
    burst: ctx.limits.stsBurst,
    refillSeconds: ctx.limits.stsRefillSeconds,
  });
  app.post<{ Params: { workspace_id: string } }>(
    '/storage/api/v1/workspaces/:workspace_id/sts',
    { preHandler: workspaceGuard(ctx.tokens) },
    async (req) => {
      const wait = await perToken.take(`sts:${hashToken(requestToken(req) ?? '')}`);
      if (wait > 0) {
        throw new ThrottledError(
          CODES.STS_THROTTLED,
          `Too many requests for bucket credentials with this token. Wait ${wait} s; credentials last ${ctx.settings.stsExpireSeconds} s, so reuse them until then.`,
          wait,
        );
      }
      const workspaceId = req.params.workspace_id;
      const prefix = await workspacePrefix(ctx, workspaceId);
      try {
        const sts = await ctx.bucket.issue({
          workspaceId,
          prefix,
          expireSeconds: ctx.settings.stsExpireSeconds,
          requestHost: req.hostname,
        });
        ctx.credentials.record({ ok: true });
        return ok(sts);
      } catch (err) {
        if (err instanceof StorageProviderError)
          ctx.credentials.record({ ok: false, reason: err.providerReason });
        throw err;
      }
    },
  );
}
