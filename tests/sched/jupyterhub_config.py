# jupyterhub_config.py - a throw-away JupyterHub (Debian 12's jupyterhub 3)
# for tests/sched: the Hub alone on 127.0.0.1:$HUB_PORT, no proxy process
# (routes kept in memory), a spawner whose "server" is a database row, so
# starting alice's server takes milliseconds.  All state under
# $HUB_STATE.  Test use only: dummy authentication.
import os

from jupyterhub.proxy import Proxy
from jupyterhub.spawner import Spawner

STATE = os.environ["HUB_STATE"]
HUB_PORT = int(os.environ["HUB_PORT"])
c = get_config()  # noqa: F821


class NoProxy(Proxy):
    """No proxy process: the API is all the tests use (the Hub still
    calls the proxy's route methods, so they must exist)."""
    _routes = {}

    async def add_route(self, routespec, target, data):
        self._routes[routespec] = {"routespec": routespec, "target": target,
                                   "data": data}

    async def delete_route(self, routespec):
        self._routes.pop(routespec, None)

    async def get_all_routes(self):
        return dict(self._routes)


class NullSpawner(Spawner):
    """A server without a process; its URL is the Hub's own, so the Hub's
    readiness check (any non-5xx answer) passes at once."""
    _running = False

    async def start(self):
        self._running = True
        return ("127.0.0.1", HUB_PORT)

    async def stop(self, now=False):
        self._running = False

    async def poll(self):
        return None if self._running else 0


c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = HUB_PORT
c.JupyterHub.bind_url = "http://127.0.0.1:%s" % os.environ["HUB_PROXY_PORT"]
c.JupyterHub.proxy_class = NoProxy
c.Proxy.should_start = False
c.JupyterHub.db_url = "sqlite:///" + os.path.join(STATE, "jupyterhub.sqlite")
c.JupyterHub.cookie_secret_file = os.path.join(STATE, "cookie_secret")
c.JupyterHub.pid_file = os.path.join(STATE, "jupyterhub.pid")
c.JupyterHub.cleanup_servers = True
c.JupyterHub.authenticator_class = "jupyterhub.auth.DummyAuthenticator"
c.DummyAuthenticator.password = "testpass"
c.Authenticator.allowed_users = {"alice", "bob"}
c.JupyterHub.spawner_class = NullSpawner
c.Spawner.start_timeout = 30
c.Spawner.http_timeout = 30
# gpufl idle authenticates as this service: users:activity to report,
# read:users / servers for the test to look and start servers
c.JupyterHub.services = [
    {"name": "gpufl-idle", "api_token": os.environ["HUB_TOKEN"]},
]
c.JupyterHub.load_roles = [
    {"name": "gpufl-idle-role",
     "scopes": ["users:activity", "read:users", "list:users",
                "read:servers", "servers"],
     "services": ["gpufl-idle"]},
]
