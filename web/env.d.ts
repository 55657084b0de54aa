/** Style sheets imported for their effect: Bun's bundler emits them beside the script. */
declare module '*.css';
