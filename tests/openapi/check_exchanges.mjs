// Checks answers a real sluiced gave (recorded by tests/system/openapi_test.cc) against
// docs/openapi.yaml: for each exchange, the operation its method and path name, then
//   - the status is documented for that operation (no `default` is used: each is named);
//   - the Content-Type is one the response documents, and the body validates against its
//     schema (ajv, JSON Schema 2020-12 as OpenAPI 3.1 has it), or there is no body when
//     none is documented;
//   - every required documented header is present, every documented header present has a
//     valid value, and no header outside the document (but the transport's) was sent;
//   - a 2xx answer went to a token with a scope the operation's security names, and never
//     to a request without a token where the operation needs one;
//   - a 2xx answer's request had a body valid against the requestBody schema, and query
//     parameters valid against theirs;
//   - a path no route serves is 404 and a method its path lacks is 405 (Allow listing the
//     documented methods), each as the document's x-unmatched-requests says.
// Then every operation of the document must have been exercised, and the document served
// at GET /v1/openapi.json must equal docs/openapi.yaml. Prints every mismatch and exits 1
// if there is any.
//
// Usage: node check_exchanges.mjs <openapi.yaml> <exchanges.json>
import { readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import YAML from 'yaml';

const [documentPath, exchangesPath] = process.argv.slice(2);
if (!documentPath || !exchangesPath) {
  console.error('usage: node check_exchanges.mjs <openapi.yaml> <exchanges.json>');
  process.exit(2);
}

const doc = YAML.parse(readFileSync(documentPath, 'utf8'), { uniqueKeys: true });
const { exchanges } = JSON.parse(readFileSync(exchangesPath, 'utf8'));

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];
// Headers the HTTP transport itself sends; the document describes the API's own.
const TRANSPORT_HEADERS = new Set(['content-type', 'content-length', 'connection', 'keep-alive',
  'date', 'transfer-encoding']);

// ---- Schemas ----------------------------------------------------------------------------

// Every `#/components/schemas/X` becomes an absolute id ajv can resolve on its own.
const BASE = 'https://sluice.invalid/components/schemas/';
function rewriteRefs(node) {
  if (Array.isArray(node)) return node.map(rewriteRefs);
  if (node === null || typeof node !== 'object') return node;
  const out = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === '$ref' && typeof v === 'string' && v.startsWith('#/components/schemas/')) {
      out[k] = BASE + v.slice('#/components/schemas/'.length);
    } else {
      out[k] = rewriteRefs(v);
    }
  }
  return out;
}

// strict: unknown keywords and type mistakes in the document's schemas are errors too.
const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
addFormats(ajv);
for (const [name, schema] of Object.entries(doc.components.schemas)) {
  ajv.addSchema(rewriteRefs(schema), BASE + name);
}
// Compiled now, so that a schema strict mode refuses fails the check even if unused.
for (const name of Object.keys(doc.components.schemas)) ajv.getSchema(BASE + name);
const compiled = new Map();
function validator(schema) {
  if (!compiled.has(schema)) compiled.set(schema, ajv.compile(rewriteRefs(schema)));
  return compiled.get(schema);
}
function schemaErrors(schema, value) {
  const validate = validator(schema);
  if (validate(value)) return null;
  return ajv.errorsText(validate.errors, { separator: '; ', dataVar: 'body' });
}

// A document-level $ref (a response, header, parameter), followed to its target.
function resolve(node) {
  let seen = 0;
  while (node && node.$ref) {
    if (!node.$ref.startsWith('#/') || ++seen > 10) throw new Error(`cannot resolve ${node.$ref}`);
    node = node.$ref.slice(2).split('/').reduce(
      (at, part) => at?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
    if (!node) throw new Error('dangling $ref');
  }
  return node;
}

// ---- Operations -------------------------------------------------------------------------

function escapeRegExp(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// A template's path parameter is one non-empty segment without '/' or ':' (server/router.h).
const templates = Object.entries(doc.paths).map(([template, item]) => {
  const parts = template.split(/(\{[^}]+\})/).filter((p) => p !== '');
  const regex = new RegExp('^' + parts.map((p) => (p.startsWith('{') ? '([^/:]+)' : escapeRegExp(p))).join('') + '$');
  const literal = parts.filter((p) => !p.startsWith('{')).join('').length;
  return { template, item, regex, literal };
});

const operations = new Map();  // "METHOD template" -> { exercised, statuses }
for (const { template, item } of templates) {
  for (const m of METHODS) {
    if (item[m]) operations.set(`${m.toUpperCase()} ${template}`, { statuses: new Set(), exchanges: 0 });
  }
}

function matchTemplate(path) {
  const found = templates.filter((t) => t.regex.test(path));
  found.sort((a, b) => b.literal - a.literal);
  return found[0];
}

// Every schema of a response, header, parameter or request body, compiled now for the
// same reason.
function compileAll(node) {
  if (Array.isArray(node)) return node.forEach(compileAll);
  if (node === null || typeof node !== 'object') return;
  for (const [k, v] of Object.entries(node)) {
    if (k === 'schema' && v && typeof v === 'object') validator(v);
    else compileAll(v);
  }
}
compileAll(doc.paths);
compileAll(doc.components.responses);
compileAll(doc.components.headers);
compileAll(doc.components.parameters);

// ---- Checks -----------------------------------------------------------------------------

const problems = [];

function headerMap(headers) {
  const map = new Map();
  for (const [name, value] of headers) {
    const key = name.toLowerCase();
    map.set(key, map.has(key) ? `${map.get(key)}, ${value}` : value);
  }
  return map;
}

// A header's text as the schema's type would read it (style: simple).
function headerValueErrors(schema, text) {
  if (!schemaErrors(schema, text)) return null;
  for (const candidate of [Number(text), text === 'true' ? true : text === 'false' ? false : undefined]) {
    if (candidate !== undefined && !Number.isNaN(candidate) && !schemaErrors(schema, candidate)) return null;
  }
  return schemaErrors(schema, text);
}

function mediaEssence(type) {
  return (type ?? '').split(';')[0].trim().toLowerCase();
}

function isJson(type) {
  const essence = mediaEssence(type);
  return essence === 'application/json' || essence.endsWith('+json');
}

// Checks one answer against a response object; `where` prefixes each problem.
function checkResponse(where, response, ex) {
  response = resolve(response);
  const got = headerMap(ex.headers);
  const documented = new Set();
  for (const [name, header] of Object.entries(response.headers ?? {})) {
    const h = resolve(header);
    const key = name.toLowerCase();
    documented.add(key);
    if (!got.has(key)) {
      if (h.required) problems.push(`${where}: required header ${name} is missing`);
      continue;
    }
    const err = headerValueErrors(h.schema ?? {}, got.get(key));
    if (err) problems.push(`${where}: header ${name}: ${JSON.stringify(got.get(key))}: ${err}`);
  }
  for (const key of got.keys()) {
    if (!documented.has(key) && !TRANSPORT_HEADERS.has(key)) {
      problems.push(`${where}: header ${key} is not documented for this response`);
    }
  }

  const content = response.content;
  const type = got.get('content-type');
  if (!content) {
    if (ex.body.length > 0) problems.push(`${where}: a body where the document has none`);
    return;
  }
  if (ex.method === 'HEAD') return;
  const media = Object.keys(content).find((k) => k.toLowerCase() === (type ?? '').toLowerCase()) ??
    Object.keys(content).find((k) => mediaEssence(k) === mediaEssence(type));
  if (!media) {
    problems.push(`${where}: Content-Type ${JSON.stringify(type)} is not one of ${Object.keys(content).join(', ')}`);
    return;
  }
  let body = ex.body;
  if (isJson(media)) {
    try {
      body = JSON.parse(ex.body);
    } catch (e) {
      problems.push(`${where}: the body is not JSON: ${e.message}`);
      return;
    }
  }
  const err = schemaErrors(content[media].schema ?? {}, body);
  if (err) problems.push(`${where}: ${err}; body: ${ex.body.slice(0, 300)}`);
}

function securityOf(operation) {
  return operation.security ?? doc.security ?? [];
}

function checkRequest(where, operation, pathItem, ex) {
  // Security: who may get a 2xx answer.
  const security = securityOf(operation);
  if (security.length > 0 && !security.some((req) => Object.keys(req).length === 0)) {
    if (!ex.token_scopes) {
      problems.push(`${where}: ${ex.status} without a token, but the operation needs one`);
    } else {
      const allowed = security.some((req) => Object.values(req).every(
        (roles) => roles.length === 0 || roles.some((r) => ex.token_scopes.includes(r))));
      if (!allowed) {
        problems.push(`${where}: ${ex.status} for scopes [${ex.token_scopes}], which the operation's security does not name`);
      }
    }
  }
  // The body the server accepted is one the document accepts.
  const requestBody = operation.requestBody && resolve(operation.requestBody);
  if (requestBody) {
    if (ex.request_body === null || ex.request_body === '') {
      if (requestBody.required) problems.push(`${where}: accepted without the required body`);
    } else {
      const media = Object.keys(requestBody.content).find((k) => isJson(k));
      let body;
      try {
        body = JSON.parse(ex.request_body);
      } catch {
        problems.push(`${where}: accepted a body that is not JSON`);
      }
      if (media && body !== undefined) {
        const err = schemaErrors(requestBody.content[media].schema ?? {}, body);
        if (err) problems.push(`${where}: the accepted request body: ${err}`);
      }
    }
  } else if (ex.request_body) {
    problems.push(`${where}: accepted a body the operation does not document`);
  }
  // Query parameters of an accepted request.
  const params = [...(pathItem.parameters ?? []), ...(operation.parameters ?? [])].map(resolve);
  const query = new URLSearchParams(ex.query ?? '');
  for (const [name, value] of query) {
    const p = params.find((x) => x.in === 'query' && x.name === name);
    if (!p) {
      problems.push(`${where}: query parameter ${name} is not documented`);
      continue;
    }
    const err = headerValueErrors(p.schema ?? {}, value);
    if (err) problems.push(`${where}: query parameter ${name}=${value}: ${err}`);
  }
}

function allowedMethods(item) {
  const methods = METHODS.filter((m) => item[m]).map((m) => m.toUpperCase());
  if (methods.includes('GET') && !methods.includes('HEAD')) methods.push('HEAD');
  return methods.sort();
}

const unmatched = doc['x-unmatched-requests'] ?? {};
let served = null;

for (const [i, ex] of exchanges.entries()) {
  const label = `#${i} ${ex.name ? `(${ex.name}) ` : ''}${ex.method} ${ex.path} -> ${ex.status}`;
  const match = matchTemplate(ex.path);
  if (!match) {
    if (ex.status !== 404) problems.push(`${label}: no path of the document matches, yet the answer is not 404`);
    else checkResponse(`${label} [no such path]`, unmatched['no-such-path'], ex);
    continue;
  }
  const method = ex.method === 'HEAD' && !match.item.head ? 'get' : ex.method.toLowerCase();
  const operation = match.item[method];
  if (!operation) {
    if (ex.status !== 405) {
      problems.push(`${label}: ${match.template} documents no ${ex.method}, yet the answer is not 405`);
      continue;
    }
    checkResponse(`${label} [method not allowed]`, unmatched['method-not-allowed'], ex);
    const allow = (headerMap(ex.headers).get('allow') ?? '').split(',').map((s) => s.trim()).filter(Boolean).sort();
    if (!isDeepStrictEqual(allow, allowedMethods(match.item))) {
      problems.push(`${label}: Allow is [${allow}], the document has [${allowedMethods(match.item)}] for ${match.template}`);
    }
    continue;
  }
  const key = `${method.toUpperCase()} ${match.template}`;
  const where = `${label} [${key}]`;
  const op = operations.get(key);
  if (ex.method !== 'HEAD') {
    op.exchanges += 1;
    op.statuses.add(ex.status);
  }
  const response = operation.responses[String(ex.status)];
  if (!response) {
    problems.push(`${where}: status ${ex.status} is not documented (documented: ${Object.keys(operation.responses).join(', ')})`);
    continue;
  }
  checkResponse(where, response, ex);
  if (ex.status >= 200 && ex.status < 300) checkRequest(where, operation, match.item, ex);
  if (key === 'GET /v1/openapi.json' && ex.status === 200) served = ex.body;
}

// ---- Coverage and the served document ---------------------------------------------------

const missed = [...operations].filter(([, o]) => o.exchanges === 0).map(([k]) => k);
for (const k of missed) problems.push(`coverage: ${k} was never exercised`);
if (served === null) {
  problems.push('GET /v1/openapi.json was never answered 200: the served document is unchecked');
} else if (!isDeepStrictEqual(JSON.parse(served), doc)) {
  problems.push(`GET /v1/openapi.json serves a document other than ${documentPath}`);
}

const statuses = new Set(exchanges.map((e) => e.status));
const errorExchanges = exchanges.filter((e) => e.status >= 400).length;
console.log(`${exchanges.length} exchanges (${errorExchanges} answered 4xx/5xx; statuses ${[...statuses].sort().join(' ')})`);
console.log(`${operations.size - missed.length} of ${operations.size} operations exercised:`);
for (const [k, o] of operations) {
  console.log(`  ${k.padEnd(44)} ${o.exchanges} exchange(s), statuses ${[...o.statuses].sort().join(' ')}`);
}
if (problems.length > 0) {
  console.log(`\n${problems.length} mismatch(es) between the answers and ${documentPath}:`);
  for (const p of problems) console.log(`  ${p}`);
  process.exit(1);
}
console.log('every answer matches the document');
