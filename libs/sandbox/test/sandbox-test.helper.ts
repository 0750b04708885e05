import { bundleComponent, SandboxInvocation } from '@app/sandbox';

/** A bundled component ready to invoke. */
export interface TestComponent {
  codeId: string;
  bundle: string;
}

/** Bundles component code for a test. */
export async function component(code: string): Promise<TestComponent> {
  const { bundle, codeHash } = await bundleComponent(code);
  return { codeId: codeHash, bundle };
}

/** An invocation of `run` with no props unless given; one instance per code unless `instanceId` is given. */
export function invocation(c: TestComponent, extra: Partial<SandboxInvocation> = {}): SandboxInvocation {
  return { codeId: c.codeId, instanceId: c.codeId, bundle: c.bundle, entry: 'run', props: {}, ...extra };
}
