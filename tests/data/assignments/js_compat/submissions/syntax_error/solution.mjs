export function greet(name {
  return name;
}
