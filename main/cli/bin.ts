#!/usr/bin/env node
// The AWS SDK warns on Node 20 about its releases from 2027 on; the SDK
// version is pinned in package.json, so the warning tells a crew nothing.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const { main } = await import('./program.js');
process.exitCode = await main(process.argv);
