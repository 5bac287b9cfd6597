import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { workspaceGuard } from '../auth.js';
import type { ServiceContext } from '../context.js';
import { ApiError, CODES, ok, parseOrThrow, type Envelope, zInt } from '../envelope.js';
import type { ObjectInfo } from '../bucket/types.js';
import { MAX_TINY_FINGERPRINTS, MediaStore, workspacePrefix } from '../media-store.js';

// Optional fields accept null as "absent": the contract says nulls are left
// out, but clients built on other serializers send them.
const text = (max: number) => z.string().max(max).nullish();

const extSchema = z.object({
  file_group_id: text(128),
  drone_model_key: text(32),
  is_original: z.boolean().nullish(),
  payload_model_key: text(32),
  tinny_fingerprint: text(256),
  sn: text(64),
});

const metadataSchema = z.object({
  // Doubles, whatever the contract's table says about integers (service-facts.md).
  absolute_altitude: z.number().nullish(),
  relative_altitude: z.number().nullish(),
  gimbal_yaw_degree: z.number().nullish(),
  // The sample server parses exactly this form (no fractions, offset required):
  // refusing anything else here catches a client bug before it meets such a server.
  created_time: z
    .string()
    .regex(
      /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:Z|[+-]\d{2}:\d{2})$/,
      'use the form 2023-11-22T10:30:15+08:00',
    )
    .nullish(),
  shoot_position: z
    .object({ lat: z.number().min(-90).max(90).nullish(), lng: z.number().min(-180).max(180).nullish() })
    .nullish(),
});

const objectKey = z
  .string()
  .min(1)
  .max(1024)
  .refine((k) => !k.split('/').some((s) => s === '.' || s === '..'), 'it must not contain . or .. segments');

const callbackSchema = z.object({
  result: zInt(),
  name: z.string().min(1).max(255),
  object_key: objectKey,
  ext: extSchema.nullish(),
  fingerprint: text(128),
  metadata: metadataSchema.nullish(),
  path: text(1024),
  sub_file_type: zInt().min(0).max(1).nullish(),
});

const fastUploadSchema = z.object({
  fingerprint: z.string().min(1).max(128),
  name: z.string().min(1).max(255).nullish(),
  path: text(1024),
  ext: extSchema.omit({ file_group_id: true }).nullish(),
});

const tinySchema = z.object({
  tiny_fingerprints: z.array(z.string().min(1).max(256)).max(MAX_TINY_FINGERPRINTS),
});

/** The fingerprint is the file's MD5: true when the object has it, or when the bucket cannot tell. */
function sameContent(fingerprint: string, info: ObjectInfo): boolean {
  return info.md5 === null || info.md5 === fingerprint.toLowerCase();
}

export function registerMediaRoutes(app: FastifyInstance, ctx: ServiceContext): void {
  const media = new MediaStore(ctx.db);
  const guard = workspaceGuard(ctx.tokens);

  app.post<{ Params: { workspace_id: string } }>(
    '/media/api/v1/workspaces/:workspace_id/upload-callback',
    { preHandler: guard },
    async (req) => {
      const body = parseOrThrow(callbackSchema, req.body);
      const workspaceId = req.params.workspace_id;
      const prefix = await workspacePrefix(ctx, workspaceId);
      if (!body.object_key.startsWith(`${prefix}/`)) {
        throw new ApiError(
          400,
          CODES.OBJECT_KEY_OUTSIDE_PREFIX,
          `object_key must start with "${prefix}/" (the object_key_prefix from the sts endpoint); got "${body.object_key}".`,
        );
      }
      // A success report must be true: a record without its object, or with
      // other content, would make fast-upload skip files the bucket does not hold.
      if (body.result === 0) {
        const info = await ctx.bucket.objectInfo(body.object_key);
        if (!info) {
          return {
            code: CODES.OBJECT_NOT_FOUND,
            message: `object_key ${body.object_key} was not found in the bucket; upload it first.`,
          } satisfies Envelope;
        }
        if (body.fingerprint && !sameContent(body.fingerprint, info)) {
          return {
            code: CODES.FINGERPRINT_MISMATCH,
            message:
              `The object ${body.object_key} in the bucket is not the file with fingerprint ${body.fingerprint} ` +
              `(its MD5 is ${info.md5 ?? 'unknown'}); upload the file again.`,
          } satisfies Envelope;
        }
      }
      await media.insert({
        workspaceId,
        // '' is what some clients send for "no fingerprint".
        fingerprint: body.fingerprint || null,
        name: body.name,
        path: body.path ?? null,
        objectKey: body.object_key,
        result: body.result,
        subFileType: body.sub_file_type ?? null,
        metadata: body.metadata ?? null,
        ext: body.ext ?? null,
        source: 'callback',
      });
      return ok({ object_key: body.object_key });
    },
  );

  app.post<{ Params: { workspace_id: string } }>(
    '/media/api/v1/workspaces/:workspace_id/fast-upload',
    { preHandler: guard },
    async (req) => {
      const body = parseOrThrow(fastUploadSchema, req.body);
      const workspaceId = req.params.workspace_id;
      const known = await media.findKnown(workspaceId, body.fingerprint);
      // Known only if the object is still in the bucket with that content: if
      // someone deleted or replaced it, the client must upload again.
      const info = known ? await ctx.bucket.objectInfo(known.object_key) : null;
      if (!known || !info || !sameContent(body.fingerprint, info)) {
        return {
          code: CODES.FINGERPRINT_UNKNOWN,
          message: `Fingerprint ${body.fingerprint} is not known in this workspace; upload the file.`,
        } satisfies Envelope;
      }
      // The same content under this name and path now exists too: record it,
      // pointing at the object already stored (same metadata, it is the same file).
      await media.insert({
        workspaceId,
        fingerprint: known.fingerprint,
        name: body.name ?? known.name,
        path: body.path ?? null,
        objectKey: known.object_key,
        result: 0,
        subFileType: known.sub_file_type,
        metadata: known.metadata,
        ext: body.ext ?? known.ext,
        source: 'fast-upload',
      });
      return ok({});
    },
  );

  // Outside the contract, shaped like DJI's sample server (POST .../files/tiny-fingerprints):
  // which of these tiny fingerprints the workspace already has, so a client can
  // skip them without hashing whole files. One indexed query per batch.
  app.post<{ Params: { workspace_id: string } }>(
    '/media/api/v1/workspaces/:workspace_id/files/tiny-fingerprints',
    { preHandler: guard },
    async (req) => {
      const body = parseOrThrow(tinySchema, req.body);
      const known = await media.knownTiny(req.params.workspace_id, body.tiny_fingerprints);
      return ok({ tiny_fingerprints: known });
    },
  );
}
