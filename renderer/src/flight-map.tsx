/**
 * The flight map: Leaflet (1.9, SVG and DOM only: no WebGL, so it draws in
 * headless Chromium with --disable-gpu and on any laptop).
 *
 * Fully useful with no network: the points (one marker per exposure, coloured
 * by state, a square for "missing", a tick for the gimbal's direction), the
 * track in exposure order, the wayline's start, a metric scale and a north
 * arrow are all drawn locally. Base-map tiles are optional and never loaded
 * by this page: each tile is asked of main over IPC ('map:tile'), which
 * fetches it from the one configured tile source and answers with a data:
 * URL. So the window's CSP stays as strict as ever (img-src 'self' data:,
 * connect-src 'none'), the page can reach no origin at all, and main alone
 * decides which host is contacted (and can cache tiles for offline use).
 * Leaflet's stylesheet is bundled by Vite (style-src 'self'); Leaflet sets
 * positions through element.style, which CSP allows (only style attributes
 * in markup and <style> elements are restricted). Markers are built with
 * DOM calls, never innerHTML, so card file names cannot become markup.
 */
import { visible } from '../../main/shared/visible.js';
import type { FlightPointView, FlightView } from '../../main/shared/ipc.js';
import { pointStyle } from '../../main/shared/flight-map.js';
import L from 'leaflet';
import 'leaflet/dist/leaflet.css';
import { useEffect, useRef } from 'preact/hooks';
import { call } from './bridge.js';

const SVG = 'http://www.w3.org/2000/svg';

function svgEl(name: string, attrs: Record<string, string | number>): SVGElement {
  const el = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

/** The marker's drawing: a dot (or square for missing) and the gimbal tick, rotated to the yaw. */
function pointIcon(p: FlightPointView, selected: boolean): L.DivIcon {
  const { colour } = pointStyle(p.state);
  const svg = svgEl('svg', { viewBox: '-16 -16 32 32', width: 32, height: 32, 'aria-hidden': 'true' });
  if (p.gimbalYaw !== null) {
    svg.appendChild(
      svgEl('line', {
        x1: 0,
        y1: 0,
        x2: 0,
        y2: -15,
        stroke: colour,
        'stroke-width': 2.5,
        transform: `rotate(${p.gimbalYaw})`,
      }),
    );
  }
  const ring = selected
    ? { stroke: '#111418', 'stroke-width': 3 }
    : { stroke: '#ffffff', 'stroke-width': 1.5 };
  svg.appendChild(
    p.state === 'missing'
      ? svgEl('rect', {
          x: -6,
          y: -6,
          width: 12,
          height: 12,
          fill: '#ffffff',
          stroke: colour,
          'stroke-width': 3,
        })
      : svgEl('circle', { r: 6.5, fill: colour, ...ring }),
  );
  const html = document.createElement('div');
  html.className = `flight-point state-${p.state}${selected ? ' selected' : ''}`;
  html.dataset.state = p.state;
  html.dataset.index = p.index === null ? '' : String(p.index);
  html.appendChild(svg);
  return L.divIcon({ html, className: 'flight-point-icon', iconSize: [32, 32], iconAnchor: [16, 16] });
}

function northArrow(): L.Control {
  const NorthControl = L.Control.extend({
    onAdd: () => {
      const box = L.DomUtil.create('div', 'north-arrow leaflet-bar');
      box.title = 'North is up';
      const svg = svgEl('svg', {
        viewBox: '-12 -16 24 34',
        width: 24,
        height: 34,
        role: 'img',
        'aria-label': 'North',
      });
      svg.appendChild(svgEl('path', { d: 'M0 -14 L7 8 L0 4 L-7 8 Z', fill: '#111418' }));
      const n = svgEl('text', { x: 0, y: 17, 'text-anchor': 'middle', 'font-size': 10, 'font-weight': 700 });
      n.textContent = 'N';
      svg.appendChild(n);
      box.appendChild(svg);
      return box;
    },
  });
  return new NorthControl({ position: 'topright' });
}

/** Base-map tiles asked of main, one IPC call per tile. */
const IpcTiles = L.GridLayer.extend({
  createTile(coords: L.Coords, done: L.DoneCallback): HTMLElement {
    const img = document.createElement('img');
    img.alt = '';
    void call('map:tile', { z: coords.z, x: coords.x, y: coords.y }).then((r) => {
      if (!r.ok) return done(new Error(r.error.message), img);
      img.onload = () => done(undefined, img);
      img.onerror = () => done(new Error('bad tile'), img);
      img.src = r.value;
    });
    return img;
  },
}) as new (options: L.GridLayerOptions) => L.GridLayer;

export function FlightMap(props: {
  flight: FlightView;
  selected: number | null;
  onSelect: (p: FlightPointView) => void;
}) {
  const box = useRef<HTMLDivElement>(null);
  const map = useRef<L.Map | null>(null);
  const layer = useRef<L.LayerGroup | null>(null);
  const { flight, selected, onSelect } = props;

  useEffect(() => {
    if (!box.current) return;
    const m = L.map(box.current, { attributionControl: false, zoomSnap: 0.5, maxZoom: 22 });
    L.control.scale({ imperial: false, position: 'bottomleft', maxWidth: 160 }).addTo(m);
    northArrow().addTo(m);
    map.current = m;
    return () => {
      m.remove();
      map.current = null;
    };
  }, []);

  useEffect(() => {
    const m = map.current;
    if (!m || !flight.tiles) return;
    const tiles = new IpcTiles({
      maxZoom: 22,
      maxNativeZoom: flight.tiles.maxZoom,
      attribution: flight.tiles.attribution,
    });
    const attribution = L.control.attribution({ prefix: false }).addTo(m);
    tiles.addTo(m);
    return () => {
      tiles.remove();
      attribution.remove();
    };
  }, [flight.folder, flight.cardId, flight.tiles?.attribution, flight.tiles?.maxZoom]);

  useEffect(() => {
    const m = map.current;
    if (!m) return;
    layer.current?.remove();
    const group = L.layerGroup().addTo(m);
    layer.current = group;
    const ordered = flight.points
      .filter((p) => p.index !== null)
      .sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
    if (ordered.length > 1) {
      L.polyline(
        ordered.map((p) => [p.lat, p.lng] as L.LatLngTuple),
        { color: '#4a5361', weight: 2, dashArray: '5 4', interactive: false, className: 'flight-track' },
      ).addTo(group);
    }
    const start = flight.wayline?.start;
    if (start) {
      const html = document.createElement('div');
      html.className = 'wayline-start';
      html.title = `Wayline start: ${visible(flight.wayline?.name ?? '')}`;
      L.marker([start.lat, start.lng], {
        icon: L.divIcon({ html, className: 'wayline-start-icon', iconSize: [16, 16], iconAnchor: [8, 8] }),
        keyboard: false,
      }).addTo(group);
    }
    for (const p of flight.points) {
      const label = `Exposure ${p.index ?? '?'}: ${pointStyle(p.state).label}`;
      L.marker([p.lat, p.lng], {
        icon: pointIcon(p, p.index === selected),
        title: label,
        alt: label,
        riseOnHover: true,
      })
        .on('click', () => onSelect(p))
        .addTo(group);
    }
    return () => group.remove();
  }, [flight, selected]);

  useEffect(() => {
    const m = map.current;
    if (!m) return;
    const bounds = L.latLngBounds(flight.points.map((p) => [p.lat, p.lng] as L.LatLngTuple));
    if (flight.wayline?.start) bounds.extend([flight.wayline.start.lat, flight.wayline.start.lng]);
    if (bounds.isValid()) m.fitBounds(bounds, { padding: [40, 40], maxZoom: 19 });
    else m.setView([0, 0], 2);
  }, [flight.folder, flight.cardId]);

  return (
    <div class="flight-map" ref={box} role="region" aria-label={`Map of flight ${visible(flight.folder)}`} />
  );
}
