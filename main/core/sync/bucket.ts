/**
 * The current target's bucket, as the engine and offload reach it: the STS
 * credentials (cached, refreshed ahead of expiry) and one uploader per
 * provider, built from the settings. Offload gets only its narrow port
 * (BucketPort: stat and put).
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import type { ApiClient } from '../api/client.js';
import type { StorageProvider } from '../api/types.js';
import type { Config } from '../config.js';
import { createUploader } from '../storage/create.js';
import { objectKeyOf } from '../storage/keys.js';
import type { BucketPort, ObjectStat, Uploader, UploaderOptions } from '../storage/types.js';
import { loadCaFile, trustedCas } from '../tls.js';
import { warmRangeWorkers } from '../hash/workers.js';
import { md5OfFile } from '../hash/hash-worker.js';
import { StsCache } from './sts-cache.js';
import { BandwidthLimiter } from './bandwidth.js';
import { parseTimetable } from '../link/timetable.js';

/** The reads of a file sent from disk (its MD5 pass). */
const FILE_READ = 256 * 1024;

export type UploaderFactory = (provider: StorageProvider, opts: UploaderOptions) => Uploader;

export class BucketAccess implements BucketPort {
  readonly sts: StsCache;
  private readonly uploaders = new Map<string, Uploader>();
  private readonly bandwidth: BandwidthLimiter;

  constructor(
    api: ApiClient,
    private config: Config,
    private readonly makeUploader: UploaderFactory = createUploader,
  ) {
    this.sts = new StsCache((signal) => api.getSts(signal ? { signal } : {}));
    this.bandwidth = new BandwidthLimiter(config.bandwidthLimitKiBps * 1024);
    this.bandwidth.setTimetable(config.link.timetable ? parseTimetable(config.link.timetable) : null);
  }

  /**
   * New settings: uploaders are rebuilt on next use with the new part size,
   * concurrency and limit; a change of the link settings alone (the
   * timetable, once there is one) keeps them: it rules the uploads in flight
   * at their next slice.
   */
  updateConfig(config: Config): void {
    const linkOnly =
      JSON.stringify({ ...this.config, link: null }) === JSON.stringify({ ...config, link: null }) &&
      !this.config.link.timetable === !config.link.timetable;
    this.config = config;
    this.bandwidth.setLimit(config.bandwidthLimitKiBps * 1024);
    this.bandwidth.setTimetable(config.link.timetable ? parseTimetable(config.link.timetable) : null);
    if (!linkOnly) this.close();
  }

  close(): void {
    for (const u of this.uploaders.values()) u.close();
    this.uploaders.clear();
  }

  /** The uploader for a provider, made once per set of settings. */
  uploaderFor(provider: StorageProvider): Uploader {
    let u = this.uploaders.get(provider);
    if (!u) {
      const c = this.config;
      u = this.makeUploader(provider, {
        target: this.sts.get,
        partSize: c.partSizeMiB * 1024 * 1024,
        partConcurrency: c.concurrency.parts,
        maxSockets: c.concurrency.files * c.concurrency.parts + 2,
        // A connection moving less than 1 KiB/s this long is dropped and its part sent again.
        stallTimeoutMs: c.stallSeconds * 1000,
        // With a timetable the throttle is always there: its next slot (or a live change) rules at once.
        ...(c.bandwidthLimitKiBps > 0 || c.link.timetable ? { throttle: this.bandwidth.take } : {}),
        // A self-hosted bucket often shares the server's private CA.
        ...(c.caFile ? { ca: trustedCas(loadCaFile(c.caFile)) } : {}),
      });
      this.uploaders.set(provider, u);
    }
    return u;
  }

  /**
   * Gets the bucket ready while a card is still being scanned and hashed
   * (issue 31): the credentials asked for, the provider's SDK loaded and the
   * workers that read and MD5 the request bodies started, so the first
   * upload does not wait a round trip, a module load and a thread's start
   * after its fast-upload answer (0.6 s a round trip on a 4G or satellite uplink). A
   * failure here is not said: the first upload asks again and says it.
   */
  warm(opts: { parts: boolean; signal?: AbortSignal }): void {
    // Only files sent in parts read their bodies again (a photo's are kept from its hash step).
    if (opts.parts) warmRangeWorkers();
    const signal = opts.signal;
    this.sts.get(signal ? { signal } : {}).then(
      (t) => this.uploaderFor(t.provider).warm?.(),
      () => undefined,
    );
  }

  async prefix(signal?: AbortSignal): Promise<string> {
    return (await this.sts.get(signal ? { signal } : {})).objectKeyPrefix;
  }

  async stat(key: string, signal?: AbortSignal): Promise<ObjectStat> {
    const target = await this.sts.get(signal ? { signal } : {});
    return this.uploaderFor(target.provider).stat(key, signal);
  }

  async list(
    folder: string,
    maxKeys: number,
    signal?: AbortSignal,
  ): Promise<Map<string, NonNullable<ObjectStat>> | null | undefined> {
    const target = await this.sts.get(signal ? { signal } : {});
    const uploader = this.uploaderFor(target.provider);
    return uploader.list ? uploader.list(folder, maxKeys, signal) : undefined;
  }

  async put(
    folder: string,
    rel: string,
    content: Buffer | { file: string },
    contentType: string,
    signal?: AbortSignal,
    replace = false,
  ): Promise<string> {
    const target = await this.sts.get(signal ? { signal } : {});
    const key = objectKeyOf(target.objectKeyPrefix, [...folder.split('/'), ...rel.split('/')]);
    // A file: its MD5 in one streamed pass first (the Content-MD5 goes before the body), then
    // sent as it is read again (a file changed between the two is refused by a bucket that checks
    // the Content-MD5, as the embedded one and S3 do: sent again at the next sync).
    const body = Buffer.isBuffer(content)
      ? {
          filePath: '',
          size: content.length,
          md5Hex: createHash('md5').update(content).digest('hex'),
          content,
        }
      : {
          filePath: content.file,
          size: (await fs.stat(content.file)).size,
          md5Hex: (await md5OfFile(content.file, { bufferSize: FILE_READ, stopped: () => false })) as string,
          streamed: true,
        };
    await this.uploaderFor(target.provider).upload({
      ...body,
      key,
      contentType,
      ...(replace ? { replace } : {}),
      ...(signal ? { signal } : {}),
    });
    return key;
  }
}
