import type { FastifyInstance } from 'fastify';
import { workspaceGuard } from '../auth.js';
import type { ServiceContext } from '../context.js';
import { ok } from '../envelope.js';
import { workspacePrefix } from '../media-store.js';

export function registerStorageRoutes(app: FastifyInstance, ctx: ServiceContext): void {
  app.post<{ Params: { workspace_id: string } }>(
    '/storage/api/v1/workspaces/:workspace_id/sts',
    { preHandler: workspaceGuard(ctx.tokens) },
    async (req) => {
      const workspaceId = req.params.workspace_id;
      const sts = await ctx.bucket.issue({
        workspaceId,
        prefix: workspacePrefix(ctx, workspaceId),
        expireSeconds: ctx.settings.stsExpireSeconds,
        requestHost: req.hostname,
      });
      return ok(sts);
    },
  );
}
