/** What `pd init source` puts in the source: an HTTP endpoint, a timer, a key-value store. */
export interface SourceFeatures {
  http?: boolean;
  timer?: boolean;
  db?: boolean;
}

/** A name as a registry key part: lower-case words joined by dashes. */
export function slugify(name: string): string {
  return name.trim().toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '') || 'component';
}

function title(name: string): string {
  return name.trim().replace(/[-_]+/g, ' ').replace(/\b\w/g, (c) => c.toUpperCase());
}

/**
 * A source that deploys as it is: with neither `http` nor `timer` asked for, an HTTP source.
 * The timer has a default schedule, so the deploy needs no props.
 */
export function sourceTemplate(name: string, features: SourceFeatures): string {
  const http = features.http || !features.timer;
  const props: string[] = [];
  if (http) props.push('    http: { type: "$.interface.http", customResponse: false },');
  if (features.timer) props.push('    timer: { type: "$.interface.timer", default: { intervalSeconds: 15 * 60 } },');
  if (features.db) props.push('    db: "$.service.db",');
  const body: string[] = [];
  if (features.db) {
    body.push('    // The db keeps values between runs (and across redeploys of this source).');
    body.push('    const count = ((await this.db.get("count")) ?? 0) + 1;');
    body.push('    await this.db.set("count", count);');
  }
  const count = features.db ? ', count' : '';
  if (http && features.timer) {
    body.push('    // An HTTP request has a method; a timer tick has a timestamp.');
    body.push(`    const payload = event.method ? { body: event.body${count} } : { fired_at: event.timestamp${count} };`);
    body.push('    this.$emit(payload, { summary: event.method ? `${event.method} ${event.path}` : "timer" });');
  } else if (http) {
    body.push(`    this.$emit({ body: event.body, query: event.query${count} }, { summary: \`\${event.method} \${event.path}\` });`);
  } else {
    body.push(`    this.$emit({ fired_at: event.timestamp${count} }, { id: event.timestamp, summary: \`tick at \${new Date(event.timestamp * 1000).toISOString()}\` });`);
  }
  return `// A Sluice source: deploy it with \`pd deploy ${slugify(name)}.mjs\`, or develop it with \`pd dev ${slugify(name)}.mjs\`.
export default {
  key: "${slugify(name)}",
  name: "${title(name)}",
  version: "0.0.1",
  type: "source",
  description: "Emits an event ${[http ? 'for each HTTP request' : '', features.timer ? 'on a schedule' : ''].filter(Boolean).join(' and ')}.",
${features.timer && !http ? '  dedupe: "unique",\n' : ''}  props: {
${props.join('\n')}
  },
  async run(event) {
${body.join('\n')}
  },
};
`;
}

/** An action that runs as it is (`pd run <file> --prop name=...`) and can be published. */
export function actionTemplate(name: string): string {
  return `// A Sluice action: run it with \`pd run ${slugify(name)}.mjs --prop name=ada\`; publish it with \`pd publish ${slugify(name)}.mjs\`.
export default {
  key: "${slugify(name)}",
  name: "${title(name)}",
  version: "0.0.1",
  type: "action",
  description: "Greets someone.",
  props: {
    name: { type: "string", label: "Name", description: "Who to greet", default: "world", optional: true },
  },
  async run({ $ }) {
    const greeting = \`Hello, \${this.name}!\`;
    $.export("$summary", greeting);
    return greeting;
  },
};
`;
}

/** An app file: shared prop definitions and methods that components import and spread. */
export function appTemplate(name: string): string {
  const slug = slugify(name).replace(/-/g, '_');
  return `// A Sluice app file: components import it as a prop (\`props: { ${slug} }\`) and reuse its propDefinitions and methods.
export default {
  type: "app",
  app: "${slug}",
  propDefinitions: {
    query: { type: "string", label: "Query", description: "What to look for" },
  },
  methods: {
    _baseUrl() {
      return "https://api.example.com";
    },
    async search(query) {
      const res = await fetch(\`\${this._baseUrl()}/search?q=\${encodeURIComponent(query)}\`);
      return res.json();
    },
  },
};
`;
}
