"""A hostile program: allocates and touches 4 GiB.  Only run it inside `proctor run`."""
chunks = []
for _ in range(4096):
    chunks.append(bytearray(1 << 20))
print("allocated 4 GiB")
