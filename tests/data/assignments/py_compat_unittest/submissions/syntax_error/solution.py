class Inventory
    pass
