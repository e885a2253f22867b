// The API reference page (/docs): renders /openapi.json with no library and no network access
// beyond this server (FastAPI's Swagger UI and ReDoc load from a CDN and are turned off).
"use strict";

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function refName(schema) {
  return schema && schema.$ref ? schema.$ref.split("/").pop() : null;
}

function typeText(schema) {
  if (!schema) return "";
  const name = refName(schema);
  if (name) return name;
  if (schema.anyOf) return schema.anyOf.map(typeText).join(" | ");
  if (schema.type === "array") return `array of ${typeText(schema.items)}`;
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  return schema.type || "object";
}

function schemaBlock(spec, schema) {
  const name = refName(schema);
  const resolved = name ? (spec.components.schemas || {})[name] : schema;
  const summary = el("summary", {}, typeText(schema));
  return el("details", {}, summary, el("pre", {}, JSON.stringify(resolved, null, 2)));
}

function operation(spec, path, method, op) {
  const id = `${method}-${path}`.replace(/[^A-Za-z0-9]+/g, "-");
  const box = el("section", { class: "op", id },
    el("h2", {}, el("span", { class: "method" }, method.toUpperCase()), path));
  if (op.summary) box.append(el("p", {}, el("strong", {}, op.summary)));
  if (op.description) box.append(el("p", { class: "description" }, op.description));
  const params = op.parameters || [];
  if (params.length) {
    const rows = params.map((p) => el("tr", {},
      el("td", {}, el("code", {}, p.name)), el("td", {}, p.in),
      el("td", {}, typeText(p.schema)), el("td", {}, p.required ? "required" : "")));
    box.append(el("table", {}, el("tr", {}, el("th", {}, "parameter"), el("th", {}, "in"),
      el("th", {}, "type"), el("th", {}, "")), ...rows));
  }
  if (op.requestBody) {
    for (const [kind, media] of Object.entries(op.requestBody.content || {})) {
      box.append(el("div", {}, "Body ", el("code", {}, kind), ": ", schemaBlock(spec, media.schema)));
    }
  }
  const rows = Object.entries(op.responses || {}).map(([status, resp]) => {
    const media = Object.values(resp.content || {})[0];
    return el("tr", {}, el("td", {}, status), el("td", {}, resp.description || ""),
      el("td", {}, media && media.schema ? schemaBlock(spec, media.schema) : ""));
  });
  box.append(el("table", { class: "responses" }, el("tr", {}, el("th", {}, "status"),
    el("th", {}, "meaning"), el("th", {}, "body")), ...rows));
  return box;
}

async function render() {
  const status = document.getElementById("api-status");
  try {
    const response = await fetch("/openapi.json");
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const spec = await response.json();
    const toc = el("ul");
    const ops = document.getElementById("api-ops");
    let count = 0;
    for (const [path, item] of Object.entries(spec.paths)) {
      for (const [method, op] of Object.entries(item)) {
        const box = operation(spec, path, method, op);
        ops.append(box);
        toc.append(el("li", {}, el("a", { href: `#${box.id}` }, `${method.toUpperCase()} ${path}`)));
        count += 1;
      }
    }
    document.getElementById("api-toc").append(toc);
    status.textContent = `${spec.info.title} ${spec.info.version}: ${count} operations`;
  } catch (error) {
    status.textContent = `Could not load /openapi.json: ${error.message}`;
  }
}

render();
