"""Topology-aware scheduling (Kueue's TAS): the node inventory, domain trees and placement."""

from .inventory import PodSetPlacement, TASInventory, explicitly_requested
from .placement import NoFit, Request, place
from .tree import Domain, DomainTree, build_tree

__all__ = ["TASInventory", "PodSetPlacement", "explicitly_requested", "NoFit", "Request", "place", "Domain",
           "DomainTree", "build_tree"]
