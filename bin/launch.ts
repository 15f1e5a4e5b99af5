// Every bin goes through here: refuse old Node with one clear line before any module that
// needs Node 24 is loaded (a static import would fail first with an obscure syntax error).
const [major] = process.versions.node.split('.').map(Number);
if ((major ?? 0) < 24) {
  process.stderr.write(
    `svc needs Node.js 24 or newer (this is ${process.version}). ` +
      'Run it through npm (npm exec / npm run), which puts the bundled Node 24 first on PATH, ' +
      'or install Node 24.\n',
  );
  process.exit(1);
}

// Cache compiled code between runs (~0.2 s CPU per CLI invocation); harmless where unsupported.
try {
  const { enableCompileCache } = (await import('node:module')) as { enableCompileCache?: () => unknown };
  enableCompileCache?.();
} catch {
  // best effort only
}

/** Import `<relative>.ts` next to the sources, or `<relative>.js` in the compiled tree. */
export async function launch(from: string, relative: string): Promise<void> {
  const { useVendorBundles } = await import(new URL(`./vendor-hooks${from.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url).href);
  useVendorBundles(import.meta.url);
  const ext = from.endsWith('.ts') ? '.ts' : '.js';
  const mod = (await import(new URL(relative + ext, from).href)) as { main: (argv: string[]) => Promise<number | void> };
  const code = await mod.main(process.argv.slice(2));
  if (typeof code === 'number') process.exitCode = code;
}
