/**
 * createUploader without loading any provider SDK up front: the AWS SDK and
 * ali-oss take a few hundred milliseconds to load, which a run that has
 * nothing to upload (a card whose files are all done) should not pay. The
 * provider's module is imported on the uploader's first call.
 */
import type { StorageProvider } from '../api/types.js';
import { DmsError } from '../errors.js';
import type { OssUploaderOptions } from './oss.js';
import type { Uploader, UploadRequest } from './types.js';

type Factory = (opts: OssUploaderOptions) => Uploader;

function lazyUploader(load: () => Promise<Factory>, opts: OssUploaderOptions): Uploader {
  let real: Uploader | undefined;
  let loading: Promise<Uploader> | undefined;
  let closed = false;
  const get = (): Promise<Uploader> =>
    (loading ??= load().then((make) => {
      real = make(opts);
      // Closed before it was ever used: behave as a closed uploader does.
      if (closed) real.close();
      return real;
    }));
  return {
    upload: async (req: UploadRequest) => (real ?? (await get())).upload(req),
    exists: async (key: string, signal?: AbortSignal) => (real ?? (await get())).exists(key, signal),
    stat: async (key: string, signal?: AbortSignal) => (real ?? (await get())).stat(key, signal),
    // null from a store that cannot list: the caller looks at each object instead.
    list: async (folder: string, maxKeys: number, signal?: AbortSignal) => {
      const u = real ?? (await get());
      return u.list ? u.list(folder, maxKeys, signal) : null;
    },
    // A failed load is said by the first real call, which meets the same failure.
    warm: () => void get().catch(() => undefined),
    close() {
      closed = true;
      real?.close();
    },
  };
}

export function createUploader(provider: StorageProvider, opts: OssUploaderOptions): Uploader {
  switch (provider) {
    case 'aws':
    case 'minio':
      return lazyUploader(async () => (await import('./s3.js')).createS3Uploader, opts);
    case 'ali':
      return lazyUploader(async () => (await import('./oss.js')).createOssUploader, opts);
    default:
      throw new DmsError('invalid-input', `Unsupported storage provider "${String(provider)}".`, {
        retryable: false,
      });
  }
}
