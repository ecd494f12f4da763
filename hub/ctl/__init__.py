"""The mkhub CLI's client side: the control client, tables, describe and top views."""
