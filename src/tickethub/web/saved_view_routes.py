"""``/triage/views``: save the triage page's filters under a name, or delete a saved view.
Saved views belong to the signed-in person (``services/saved_views.py``); a view that
cannot be saved is the service's 422 problem, on the error page (``page_route``)."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import parse_qsl, urlencode

from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse, Response

from tickethub.api.deps import call, hub_of
from tickethub.web.page_route import PageRoute
from tickethub.web.session import Viewer, check_csrf, viewer
from tickethub.web.triage_routes import KEEP

router = APIRouter(include_in_schema=False, route_class=PageRoute)
Me = Annotated[Viewer, Depends(viewer)]


@router.post("/triage/views")
async def save_view(request: Request, me: Me) -> Response:
    form = await request.form()
    check_csrf(me, form.get("csrf"))
    pairs = [(k, v) for k, v in parse_qsl(str(form.get("back") or ""))
             if k in KEEP and k != "cursor" and v]
    query = urlencode(pairs)
    await call(hub_of(request).saved_views.save, me.actor, str(form.get("name") or ""),
               query)
    return RedirectResponse("/triage?" + query, status_code=303)


@router.post("/triage/views/delete")
async def delete_view(request: Request, me: Me) -> Response:
    form = await request.form()
    check_csrf(me, form.get("csrf"))
    await call(hub_of(request).saved_views.delete, me.actor,
               str(form.get("name") or ""))
    return RedirectResponse("/triage", status_code=303)
